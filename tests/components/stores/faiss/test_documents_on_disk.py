"""A FAISS store opened from disk reads its documents from the saved file: same answers, memory that does not grow.

Each test compares a reopened store with an in-memory store given the same calls (the in-memory store keeps every
document decoded, as every store did before): every read must answer the same, writes after opening must work
all or nothing, and the BM25 store of a hybrid index must still read the FAISS store's documents.
"""

import threading
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError
from haystack.document_stores.types import DuplicatePolicy

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore
from components.stores.recent_documents import RecentDocuments
from tests.support.stores import file_size_limit

DIM = 8
ODD = {"field": "meta.kind", "operator": "==", "value": "odd"}
RANGE = {
    "operator": "AND",
    "conditions": [
        {"field": "meta.n", "operator": ">=", "value": 30},
        {"field": "meta.n", "operator": "<", "value": 90},
    ],
}
WORDS = ["sun", "moon", "planet", "star", "comet", "orbit", "tide", "dust"]


def documents(n: int, start: int = 0) -> list[Document]:
    """N documents with words, meta and a seeded embedding; every seventh has no embedding."""
    rng = np.random.default_rng(start)
    return [
        Document(
            id=f"d{i}",
            content=" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 4 + i % 5)),
            meta={"kind": "odd" if i % 2 else "even", "n": i, "tags": ["a", "b"][: i % 3]},
            embedding=None if i % 7 == 0 else rng.standard_normal(DIM).astype(np.float32).tolist(),
        )
        for i in range(start, start + n)
    ]


def queries(count: int = 5, seed: int = 9) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)


def reads(store: FAISSDocumentStore) -> list[Any]:
    """Every read a user makes, with and without filters and embeddings; their results."""
    found: list[Any] = []
    for filters in (None, ODD, RANGE):
        for top_k in (1, 10, 200):
            found.append(store.search(queries(), top_k=top_k, filters=filters))
        found.append(store.search(queries(2), top_k=5, filters=filters, return_embedding=True))
        found.append(store.search_shared_hits(queries(2), top_k=5, filters=filters))
        found.append(store.filter_documents(filters))
        found.append(store.count_documents_by_filter(filters) if filters else None)
    found.append(store.count_documents())
    found.append(store.get_documents_by_id(["d5", "d7", "d0", "d5"], return_embedding=True))
    found.append(store.get_documents_by_id(["d3", "d14"]))
    return found


def saved_and_memory(tmp_path: Path, docs: list[Document], **settings: Any) -> tuple[FAISSDocumentStore, ...]:
    """A store saved to TMP_PATH with DOCS, that store reopened, and an in-memory store with the same DOCS."""
    FAISSDocumentStore(path=str(tmp_path / "s"), **settings).write_documents(docs)
    memory = FAISSDocumentStore(**settings)
    memory.write_documents(docs)
    return FAISSDocumentStore(path=str(tmp_path / "s"), **settings), memory


@pytest.mark.parametrize("factory", ["Flat", "HNSW32", "IVF4,Flat"])
def test_a_reopened_store_answers_every_read_as_the_store_in_memory(tmp_path: Path, factory: str) -> None:
    reopened, memory = saved_and_memory(tmp_path, documents(120), index_factory=factory)
    expected = reads(memory)
    assert reads(reopened) == expected
    assert reads(reopened) == expected  # again, now from the documents it kept decoded
    with pytest.raises(Exception, match="not in this store"):
        reopened.get_documents_by_id(["d1", "nowhere"])


def test_hits_are_copies_the_caller_may_change(tmp_path: Path) -> None:
    reopened, _ = saved_and_memory(tmp_path, documents(30))
    first = reopened.search(queries(1), top_k=3)[0]
    first[0].meta["kind"] = "changed by the caller"
    first[0].meta["tags"] = "changed as well"
    again = reopened.search(queries(1), top_k=3)[0]
    assert again[0].meta["kind"] != "changed by the caller"
    assert reopened.get_documents_by_id([again[0].id])[0].meta["tags"] != "changed as well"


def test_opening_a_large_store_decodes_none_of_its_documents(tmp_path: Path) -> None:
    """Opening 50,000 documents and searching them holds a small fraction of what the documents weigh decoded.
    (What the store holds after the search: opening reads its small files, the manifest, into a buffer sized to
    their limit, which tracemalloc counts in full but never becomes resident.)"""
    n = 50_000
    rng = np.random.default_rng(0)
    docs = [Document(id=f"p{i}", content=f"passage {i} " + "word " * 60, meta={"n": i}) for i in range(n)]
    writer = FAISSDocumentStore(path=str(tmp_path / "big"), autosave=False)
    writer.write_embeddings(docs, rng.standard_normal((n, DIM)).astype(np.float32))
    writer.save()
    del writer, docs
    tracemalloc.start()
    try:
        memory = FAISSDocumentStore(embedding_dim=DIM)
        before = tracemalloc.get_traced_memory()[0]
        memory.write_embeddings(
            [Document(id=f"p{i}", content=f"passage {i} " + "word " * 60, meta={"n": i}) for i in range(n)],
            rng.standard_normal((n, DIM)).astype(np.float32),
        )
        in_memory = tracemalloc.get_traced_memory()[0] - before
        del memory
        before = tracemalloc.get_traced_memory()[0]
        store = FAISSDocumentStore(path=str(tmp_path / "big"))
        assert store.count_documents() == n
        hits = store.search(queries(200), top_k=10)
        opened = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert all(len(found) == 10 for found in hits)
    assert in_memory > 20_000_000  # the documents decoded: hundreds of bytes each
    assert opened < in_memory / 10, (opened, in_memory)


def test_writes_after_opening_work_and_are_saved(tmp_path: Path) -> None:
    docs = documents(80)
    reopened, memory = saved_and_memory(tmp_path, docs)
    for store in (reopened, memory):
        store.write_documents(documents(20, start=200))
        store.write_documents(documents(5, start=10), policy=DuplicatePolicy.OVERWRITE)
        store.delete_documents(["d1", "d2", "d203"])
        assert store.update_by_filter(RANGE, {"seen": True}) > 0
        assert store.delete_by_filter({"field": "meta.n", "operator": "==", "value": 40}) == 1
    assert reads(reopened) == reads(memory)
    again = FAISSDocumentStore(path=str(tmp_path / "s"))
    assert reads(again) == reads(memory)
    again.delete_all_documents()
    assert FAISSDocumentStore(path=str(tmp_path / "s")).count_documents() == 0
    assert again.search(queries(), top_k=3) == [[]] * 5


def test_a_failed_write_after_opening_changes_nothing_and_the_next_one_works(tmp_path: Path) -> None:
    """The first write copies the saved table to a temporary file: a disk too full for that copy, or for the new
    generation, fails that write alone, in one line naming what to do."""
    docs = [replace(d, content=f"{d.content} " + "planet " * 150) for d in documents(3000)]  # 3 MB
    reopened, memory = saved_and_memory(tmp_path, docs)
    expected = reads(memory)
    with file_size_limit(256 * 1024), pytest.raises(OSError, match=r"temporary copy .* point SQLITE_TMPDIR at a disk"):
        reopened.write_documents(documents(3, start=9000))  # SQLite keeps 2 MiB in memory, then writes the file
    assert reads(reopened) == expected
    reopened.write_documents(documents(1, start=6000))  # the table is now a writable copy
    memory.write_documents(documents(1, start=6000))
    big = [Document(id="big", content="planet " * 40_000, embedding=[1.0] * DIM)]
    with file_size_limit(reopened_size(tmp_path) + 64 * 1024), pytest.raises((OSError, DocumentStoreError)):
        reopened.write_documents(big)
    assert reads(reopened) == reads(memory)
    assert reads(FAISSDocumentStore(path=str(tmp_path / "s"))) == reads(memory)
    assert reopened.write_documents(documents(2, start=7000)) == 2


def test_a_write_that_writes_nothing_copies_nothing(tmp_path: Path) -> None:
    """Re-ingesting known documents under SKIP (or writing none) changes nothing, so it must not copy the saved
    table first: at a million passages that copy is gigabytes of temporary disk and a long pause."""
    docs = [replace(d, content=f"{d.content} " + "planet " * 150) for d in documents(3000)]  # 3 MB
    reopened, memory = saved_and_memory(tmp_path, docs)
    with file_size_limit(256 * 1024):  # a copy could not be written
        assert reopened.write_documents(docs[:50], policy=DuplicatePolicy.SKIP) == 0
        assert reopened.write_documents([]) == 0
    assert reads(reopened) == reads(memory)


def reopened_size(tmp_path: Path) -> int:
    """Bytes of the largest file of the store's live generation."""
    return max(f.stat().st_size for f in (tmp_path / "s").rglob("*") if f.is_file())


def test_a_reader_keeps_its_generation_after_another_writer_replaces_it(tmp_path: Path) -> None:
    reopened, memory = saved_and_memory(tmp_path, documents(60))
    assert reopened.count_documents() == 60  # opened now: its generation's file is held open
    FAISSDocumentStore(path=str(tmp_path / "s")).write_documents(documents(5, start=300))  # the old one is removed
    assert reads(reopened) == reads(memory)
    assert FAISSDocumentStore(path=str(tmp_path / "s")).count_documents() == 65


def test_bm25_reads_the_documents_of_an_opened_faiss_store_while_it_searches(tmp_path: Path) -> None:
    """A hybrid index: the BM25 store holds ids only and reads the FAISS store's documents, also while the FAISS
    store (open in this process, documents on disk) searches in another thread and after it changes."""
    docs = documents(300)
    FAISSDocumentStore(path=str(tmp_path / "dense")).write_documents(docs)
    BM25DocumentStore(path=str(tmp_path / "bm25"), document_store_path=str(tmp_path / "dense")).write_documents(docs)
    alone = [
        (d.id, d.score, d.content, d.meta)
        for d in BM25DocumentStore(path=str(tmp_path / "bm25")).bm25_retrieval("moon tide")
    ]
    dense = FAISSDocumentStore(path=str(tmp_path / "dense"))
    dense_hits = dense.search(queries(), top_k=10)
    bm25 = BM25DocumentStore(path=str(tmp_path / "bm25"))
    errors: list[BaseException] = []

    def searching() -> None:
        try:
            for _ in range(30):
                assert dense.search(queries(), top_k=10) == dense_hits
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    thread = threading.Thread(target=searching)
    thread.start()
    for _ in range(30):
        assert seen(bm25.bm25_retrieval("moon tide")) == alone
    thread.join()
    assert not errors
    dense.update_by_filter(ODD, {"changed": True})  # a new generation; BM25 keeps reading the one it opened
    assert seen(bm25.bm25_retrieval("moon tide")) == alone


def seen(hits: list[Document]) -> list[tuple[Any, ...]]:
    """What a caller observes of BM25 hits."""
    return [(d.id, d.score, d.content, d.meta) for d in hits]


def test_recent_documents_stay_within_their_content_budget() -> None:
    recent = RecentDocuments(size=100, text_budget=25)
    docs = {row: Document(id=f"r{row}", content="x" * 10) for row in range(5)}
    recent.remember(docs)
    assert recent.get_many(range(5)) == [None, None, None, docs[3], docs[4]]  # 20 of 25 characters kept
    assert recent.get_by_id(["r0", "r3", "r4"]) == [None, docs[3], docs[4]]
    recent.forget([3])
    assert recent.get_by_id(["r3"]) == [None]
    recent.remember({9: Document(id="long", content="y" * 100)})
    assert recent.get_many([4, 9]) == [None, Document(id="long", content="y" * 100)]  # the newest always stays
