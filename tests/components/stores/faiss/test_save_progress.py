"""A FAISS store's save reports its stages (``save(on_progress=...)``): the document table, then the vectors, then
the sha256 of the files it wrote, in bytes (``digesting``), counting up to their size on disk."""

from pathlib import Path

import numpy as np
from haystack import Document

from components.stores import FAISSDocumentStore
from components.stores.faiss.shared_documents import FAISS_GENERATIONS
from components.stores.file_digests import DIGESTING

Report = tuple[str, int, int]


def saved_reports(store: FAISSDocumentStore) -> tuple[list[Report], list[Report]]:
    """Save STORE, recording what it reports: the reports of the stages counting documents, then the digesting's."""
    reports: list[Report] = []
    store.save(on_progress=lambda stage, done, total: reports.append((stage, done, total)))
    stages = [report for report in reports if report[0] != DIGESTING]
    assert reports[: len(stages)] == stages, reports  # the digesting comes last, once the files are written
    return stages, reports[len(stages) :]


def assert_digested(reports: list[Report], path: Path) -> None:
    """REPORTS count the bytes of every file the saved generation of PATH records, from 0 up to all of them."""
    found = FAISS_GENERATIONS.read_current(path)
    assert found is not None
    total = sum(found[1]["files"].values())  # documents.sqlite, vectors.faiss, tombstones.npy
    assert total > 0
    assert reports[0] == (DIGESTING, 0, total), reports
    assert reports[-1] == (DIGESTING, total, total), reports
    assert {(stage, whole) for stage, _, whole in reports} == {(DIGESTING, total)}, reports
    done = [count for _, count, _ in reports]
    assert done == sorted(set(done)), reports  # counting up


def test_a_save_reports_the_documents_then_the_vectors_then_their_bytes_digested(tmp_path: Path) -> None:
    vectors = np.random.default_rng(0).standard_normal((30, 8)).astype(np.float32)
    documents = [Document(id=f"d{i}", content=f"doc {i}", embedding=vectors[i].tolist()) for i in range(30)]
    store = FAISSDocumentStore(path=str(tmp_path / "s"), autosave=False)
    store.write_documents([*documents, Document(id="plain", content="no embedding")])
    stages, digests = saved_reports(store)
    assert stages == [
        ("writing documents", 0, 31),
        ("writing documents", 31, 31),
        ("writing vectors", 0, 30),  # the document without embedding has no vector
        ("writing vectors", 30, 30),
    ]
    assert_digested(digests, tmp_path / "s")
    reopened = FAISSDocumentStore(path=str(tmp_path / "s"))
    assert reopened.count_documents() == 31
    assert [d.id for d in reopened.search(vectors[7:8], top_k=1)[0]] == ["d7"]


def test_a_store_without_vectors_reports_its_documents_only(tmp_path: Path) -> None:
    store = FAISSDocumentStore(path=str(tmp_path / "s"), autosave=False)
    store.write_documents([Document(id=f"d{i}", content=f"doc {i}") for i in range(4)])
    stages, digests = saved_reports(store)
    assert stages == [("writing documents", 0, 4), ("writing documents", 4, 4)]
    assert_digested(digests, tmp_path / "s")
