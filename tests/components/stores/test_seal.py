"""A generation's manifest is sealed: a field changed without recomputing the seal is refused naming the file.

The seal is the sha256 of the manifest's other fields (``components.stores.crash_safe_generations.seal_of``): it
makes a generation, manifest included, one tamper-evident unit, for the index and for each store inside it.
"""

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.crash_safe_generations import SEAL, seal_of
from tests.support.integrity import live

DOCS = [Document(id=f"d{i}", content=f"tide{i % 3} moon planet") for i in range(12)]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A saved BM25 store."""
    path = tmp_path / "bm25"
    BM25DocumentStore(path=str(path)).write_documents(DOCS)
    return path


def rewrite(manifest_file: Path, change: Callable[[dict], None]) -> None:
    """Change the manifest by hand, leaving its seal as it was."""
    manifest = json.loads(manifest_file.read_text())
    change(manifest)
    manifest_file.write_text(json.dumps(manifest, indent=1))


def test_a_saved_manifest_carries_the_seal_of_its_fields(store: Path) -> None:
    manifest = json.loads((live(store) / "manifest.json").read_text())
    assert manifest[SEAL] == seal_of(manifest)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(k1=2.0), "changed after it was written"),
        (lambda m: m.update(note="added by hand"), "changed after it was written"),
        (lambda m: m.pop(SEAL), "carries no seal"),
    ],
    ids=["changed-value", "added-field", "seal-removed"],
)
def test_an_unsealed_change_is_refused_naming_the_manifest(
    store: Path, change: Callable[[dict], None], message: str
) -> None:
    manifest_file = live(store) / "manifest.json"
    rewrite(manifest_file, change)
    with pytest.raises(DocumentStoreError, match=message) as refused:
        BM25DocumentStore(path=str(store)).count_documents()
    assert str(manifest_file) in str(refused.value)


def test_the_seal_does_not_depend_on_formatting(store: Path) -> None:
    """Re-indenting a manifest or reordering its keys changes no field: it still opens."""
    manifest_file = live(store) / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest_file.write_text(json.dumps(dict(reversed(list(manifest.items()))), indent=4))
    assert BM25DocumentStore(path=str(store)).count_documents() == len(DOCS)
