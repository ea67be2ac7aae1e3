"""A FAISS store's save reports its stages (``save(on_progress=...)``): the document table, then the vectors."""

from pathlib import Path

import numpy as np
from haystack import Document

from components.stores import FAISSDocumentStore

Report = tuple[str, int, int]


def saved_reports(store: FAISSDocumentStore) -> list[Report]:
    """Save STORE, recording what it reports."""
    reports: list[Report] = []
    store.save(on_progress=lambda stage, done, total: reports.append((stage, done, total)))
    return reports


def test_a_save_reports_the_documents_then_the_vectors(tmp_path: Path) -> None:
    vectors = np.random.default_rng(0).standard_normal((30, 8)).astype(np.float32)
    documents = [Document(id=f"d{i}", content=f"doc {i}", embedding=vectors[i].tolist()) for i in range(30)]
    store = FAISSDocumentStore(path=str(tmp_path / "s"), autosave=False)
    store.write_documents([*documents, Document(id="plain", content="no embedding")])
    assert saved_reports(store) == [
        ("writing documents", 0, 31),
        ("writing documents", 31, 31),
        ("writing vectors", 0, 30),  # the document without embedding has no vector
        ("writing vectors", 30, 30),
    ]
    reopened = FAISSDocumentStore(path=str(tmp_path / "s"))
    assert reopened.count_documents() == 31
    assert [d.id for d in reopened.search(vectors[7:8], top_k=1)[0]] == ["d7"]


def test_a_store_without_vectors_reports_its_documents_only(tmp_path: Path) -> None:
    store = FAISSDocumentStore(path=str(tmp_path / "s"), autosave=False)
    store.write_documents([Document(id=f"d{i}", content=f"doc {i}") for i in range(4)])
    assert saved_reports(store) == [("writing documents", 0, 4), ("writing documents", 4, 4)]
