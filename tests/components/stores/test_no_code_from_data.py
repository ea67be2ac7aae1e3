"""Opening a pipeline file or a saved index never runs code named in it; tampered manifests are refused by field."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from haystack import Pipeline
from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore
from tests.support.integrity import edit_manifest, live
from tests.support.stores import doc

PIPELINE = """
components:
  bm25:
    type: components.retrievers.bm25.retriever.BM25Retriever
    init_parameters:
      document_store:
        type: components.stores.bm25.document_store.BM25DocumentStore
        init_parameters:
          path: {path}
          tokenizer: {tokenizer}
connections: []
"""


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the live manifest of a saved store the way an attacker with write access to the files would: its seal
    recomputed, so what refuses the change is the store's own check of the field. CHANGE edits in place (whatever it
    returns, such as a popped value, is not a replacement manifest)."""

    def in_place(manifest: dict[str, Any]) -> None:
        change(manifest)

    edit_manifest(live(path) / "manifest.json", in_place)


@pytest.mark.parametrize("tokenizer", ["os:system", "subprocess:getoutput"])
def test_a_pipeline_naming_a_python_function_as_tokenizer_runs_nothing(tmp_path: Path, tokenizer: str) -> None:
    """The YAML is refused while loading, before any query could reach the named function."""
    marker = tmp_path / "marker"
    yaml = PIPELINE.format(path=tmp_path / "bm25", tokenizer=tokenizer)
    with pytest.raises(Exception, match="tokenizer must be one of en, zh, character, whitespace, words"):
        Pipeline.loads(yaml).run({"bm25": {"query": f"touch {marker}"}})
    assert not marker.exists()


def test_a_manifest_naming_a_python_function_runs_nothing(tmp_path: Path) -> None:
    """An edited manifest with tokenizer 'os:system' is refused naming the file and field; the query never runs."""
    path, marker = tmp_path / "bm25", tmp_path / "marker"
    BM25DocumentStore(path=str(path)).write_documents([doc("a", "planet")])
    _edit(path, lambda m: m["tokenizer"].update(tokenizer="os:system"))
    with pytest.raises(DocumentStoreError, match=r"manifest\.json: field 'tokenizer\.tokenizer' is 'os:system'"):
        BM25DocumentStore(path=str(path)).bm25_retrieval(f"touch {marker}")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m: m["tokenizer"].update(lang="klingon"), "tokenizer.lang"),
        (lambda m: m.update(tokenizer="en"), "tokenizer"),
        (lambda m: m["bm25"].update(method="bm99"), "bm25.method"),
        (lambda m: m["bm25"].update(k1="0.9"), "bm25.k1"),
        (lambda m: m["bm25"].pop("b"), "bm25.b"),
        (lambda m: m.update(documents=-1), "documents"),
        (lambda m: m.update(document_store_path=["x"]), "document_store_path"),
        (lambda m: m.update(format_version=2), "format_version"),
    ],
)
def test_tampered_bm25_manifests_are_refused_naming_the_field(tmp_path: Path, change: Callable, field: str) -> None:
    """Each value we never write is a DocumentStoreError naming manifest.json and the field."""
    path = tmp_path / "bm25"
    BM25DocumentStore(path=str(path)).write_documents([doc("a", "planet")])
    _edit(path, change)
    with pytest.raises(DocumentStoreError, match=rf"manifest\.json: (field '{field}'|{field} )"):
        BM25DocumentStore(path=str(path)).count_documents()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m: m.update(metric="os:system"), "metric"),
        (lambda m: m.update(index_factory=["Flat"]), "index_factory"),
        (lambda m: m.update(next_row="0"), "next_row"),
        (lambda m: m.update(info="x"), "info"),
    ],
)
def test_tampered_faiss_manifests_are_refused_naming_the_field(tmp_path: Path, change: Callable, field: str) -> None:
    """The FAISS store's manifest is checked the same way before any of it is used."""
    path = tmp_path / "dense"
    FAISSDocumentStore(path=str(path)).write_documents([doc("a", "planet")])
    _edit(path, change)
    with pytest.raises(DocumentStoreError, match=rf"manifest\.json: field '{field}'"):
        FAISSDocumentStore(path=str(path)).count_documents()
