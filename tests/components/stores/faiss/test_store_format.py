"""The saved store's format tag says how its table holds embeddings: ``needle-faiss-store/2`` for an exact Flat
index (rows read their vectors from it), ``/1`` for every index that keeps a blob per embedding. A needle that
reads only ``/1`` (0.2.0) then refuses a ``/2`` generation as a format it does not know, instead of reading its
empty blobs as corrupted embeddings; this one reads both, and refuses a tag that contradicts the index."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores.faiss.document_store import FAISSDocumentStore
from tests.support.integrity import edit_manifest, live

DIM = 8


def documents() -> list[Document]:
    vectors = np.random.default_rng(1).standard_normal((12, DIM)).astype(np.float32)
    return [Document(id=f"d{i}", content=f"text {i}", embedding=vectors[i].tolist()) for i in range(12)]


def saved(path: Path, **settings: Any) -> Path:
    """A store of ``documents()`` saved at PATH with SETTINGS; its live generation's manifest."""
    FAISSDocumentStore(path=str(path), **settings).write_documents(documents())
    return live(path) / "manifest.json"


@pytest.mark.parametrize(
    ("metric", "factory", "tag"),
    [
        ("inner_product", "Flat", "needle-faiss-store/2"),
        ("l2", "Flat", "needle-faiss-store/2"),
        ("cosine", "Flat", "needle-faiss-store/1"),
        ("inner_product", "HNSW32", "needle-faiss-store/1"),
    ],
)
def test_an_exact_flat_store_is_tagged_2_the_others_1(tmp_path: Path, metric: str, factory: str, tag: str) -> None:
    manifest = saved(tmp_path, metric=metric, index_factory=factory)
    assert json.loads(manifest.read_text())["format"] == tag


def test_a_flat_generation_tagged_1_before_the_tag_changed_opens_and_answers_the_same(tmp_path: Path) -> None:
    saved(tmp_path / "new")
    edit_manifest(saved(tmp_path / "old"), lambda manifest: manifest.update(format="needle-faiss-store/1"))
    query = np.random.default_rng(2).standard_normal((1, DIM)).astype(np.float32)
    old, new = (FAISSDocumentStore(path=str(tmp_path / name)) for name in ("old", "new"))
    assert old.search(query, top_k=4, return_embedding=True) == new.search(query, top_k=4, return_embedding=True)


def test_tag_2_on_an_index_that_keeps_blobs_is_refused(tmp_path: Path) -> None:
    manifest = saved(tmp_path, index_factory="HNSW32")
    edit_manifest(manifest, lambda fields: fields.update(format="needle-faiss-store/2"))
    with pytest.raises(DocumentStoreError, match=r"manifest\.json: corrupted, format needle-faiss-store/2 is an exact"):
        FAISSDocumentStore.load(str(tmp_path)).count_documents()


def test_an_unknown_tag_is_refused_in_one_line(tmp_path: Path) -> None:
    manifest = saved(tmp_path)
    edit_manifest(manifest, lambda fields: fields.update(format="needle-faiss-store/3"))
    with pytest.raises(DocumentStoreError) as refused:
        FAISSDocumentStore(path=str(tmp_path)).count_documents()
    assert str(refused.value) == f"{manifest}: not a needle-faiss-store/1 or needle-faiss-store/2 manifest"
