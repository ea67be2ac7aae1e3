"""Stores built with a path and autosave off (as `needle index` builds them) keep written documents on disk.

Such a FAISS store keeps its rows in a temporary SQLite file and decodes none of them into Python; such a
BM25 store appends written documents to a temporary file. Both must answer every call exactly as the
in-memory stores do, save the same generation, and leave nothing behind when the build is killed.
"""

import gc
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.document_table import document_line
from components.stores.bm25.spill import DocumentSpill
from components.stores.faiss.document_store import FAISSDocumentStore
from tests.support.paths import REPO

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "zeta", "lambda"]
KIND = {"field": "meta.kind", "operator": "==", "value": "odd"}
QUERIES = ["alpha beta", "omega kappa theta", "zeta"]


def documents(n: int, dim: int | None, start: int = 0) -> list[Document]:
    """N documents with varied words and meta (and a seeded embedding of size DIM unless None)."""
    rng = np.random.default_rng(start)
    return [
        Document(
            id=f"d{i}",
            content=" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 6 + i % 4)),
            meta={"kind": "odd" if i % 2 else "even", "n": i},
            embedding=rng.standard_normal(dim).astype(np.float32).tolist() if dim else None,
        )
        for i in range(start, start + n)
    ]


def seen(docs: list[Document]) -> list[tuple[Any, ...]]:
    """What a caller observes of documents: id, content, meta, score and embedding."""
    return [(d.id, d.content, d.meta, d.score, d.embedding) for d in docs]


def faiss_calls(store: FAISSDocumentStore) -> list[Any]:
    """Every kind of FAISS store call, in sequence; their results."""
    queries = np.random.default_rng(9).standard_normal((3, 8)).astype(np.float32)
    out: list[Any] = [store.write_documents(documents(150, 8))]
    out.append(store.write_documents([Document(id="bare", content="no vector", meta={"kind": "odd"})]))
    with pytest.raises(DuplicateDocumentError):
        store.write_documents(documents(2, 8, start=40))
    out.append(store.write_documents(documents(60, 8, start=100), policy=DuplicatePolicy.OVERWRITE))
    out.append(store.write_documents(documents(5, 8, start=155), policy=DuplicatePolicy.SKIP))
    out.append(seen(store.get_documents_by_id(["d3", "bare", "d120"], return_embedding=True)))
    out.append(seen(store.get_documents_by_id(["d7"])))
    out.append(seen(store.filter_documents(KIND)))
    out.append(store.count_documents_by_filter(KIND))
    out.append([seen(hits) for hits in store.search(queries, top_k=7, return_embedding=True)])
    out.append([seen(hits) for hits in store.search(queries, top_k=5, filters=KIND)])
    out.append(store.update_by_filter({"field": "meta.n", "operator": "<", "value": 20}, {"tag": "low"}))
    store.delete_documents(["d1", "d2", "bare", "unknown"])
    out.append(store.delete_by_filter({"field": "meta.n", "operator": ">", "value": 150}))
    out.append([seen(hits) for hits in store.search(queries, top_k=7)])
    out.append((store.count_documents(), seen(store.filter_documents())))
    return out


@pytest.mark.parametrize("factory", ["Flat", "IVF2,Flat"])
def test_faiss_build_store_answers_as_the_in_memory_store(tmp_path: Path, factory: str) -> None:
    """Every call gives the same results, and the saved generation loads the same documents and hits."""
    memory = FAISSDocumentStore(index_factory=factory)
    built = FAISSDocumentStore(path=str(tmp_path / "dense"), index_factory=factory, autosave=False)
    assert faiss_calls(built) == faiss_calls(memory)
    built.save()
    loaded = FAISSDocumentStore(path=str(tmp_path / "dense"), index_factory=factory)
    queries = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    assert seen(loaded.filter_documents()) == seen(memory.filter_documents())
    assert [seen(h) for h in loaded.search(queries, top_k=9)] == [seen(h) for h in memory.search(queries, top_k=9)]


def bm25_calls(store: BM25DocumentStore) -> list[Any]:
    """Every kind of BM25 store call, in sequence; their results."""
    out: list[Any] = [store.write_documents(documents(120, None))]
    with pytest.raises(DuplicateDocumentError):
        store.write_documents(documents(2, None, start=40))
    out.append(store.write_documents(documents(30, None, start=110), policy=DuplicatePolicy.OVERWRITE))
    out.append(store.write_documents(documents(5, None, start=135), policy=DuplicatePolicy.SKIP))
    out.append(seen(store.get_documents_by_id(["d3", "d119", "d130"])))
    out.append([seen(hits) for hits in store.bm25_retrieval_batch(QUERIES, top_k=6)])
    out.append([seen(hits) for hits in store.bm25_retrieval_batch(QUERIES, top_k=6, filters=KIND)])
    out.append(store.update_by_filter({"field": "meta.n", "operator": "<", "value": 20}, {"tag": "low"}))
    store.delete_documents(["d1", "d2", "unknown"])
    out.append(store.delete_by_filter({"field": "meta.n", "operator": ">", "value": 130}))
    out.append([seen(hits) for hits in store.bm25_retrieval_batch(QUERIES, top_k=6)])
    out.append((store.count_documents(), seen(store.filter_documents(KIND))))
    return out


def test_bm25_build_store_answers_as_the_in_memory_store(tmp_path: Path) -> None:
    """Every call gives the same results, and the saved generation loads the same documents and hits."""
    memory = BM25DocumentStore()
    built = BM25DocumentStore(path=str(tmp_path / "bm25"), autosave=False)
    assert bm25_calls(built) == bm25_calls(memory)
    built.save()
    memory.save(path=str(tmp_path / "memory"))  # a save compacts the index: compare saved with saved
    loaded, reference = (BM25DocumentStore(path=str(tmp_path / name)) for name in ("bm25", "memory"))
    assert seen(loaded.filter_documents()) == seen(reference.filter_documents())
    want = [seen(hits) for hits in reference.bm25_retrieval_batch(QUERIES, top_k=8)]
    assert [seen(hits) for hits in loaded.bm25_retrieval_batch(QUERIES, top_k=8)] == want
    assert [seen(hits) for hits in built.bm25_retrieval_batch(QUERIES, top_k=8)] == want
    for name in ("documents.jsonl", "documents.offsets.npy"):
        assert (live(tmp_path / "bm25") / name).read_bytes() == (live(tmp_path / "memory") / name).read_bytes()


def live(store: Path) -> Path:
    """The live generation directory of a saved store."""
    return store / (store / "CURRENT").read_text().strip()


def live_documents() -> int:
    """How many haystack Documents exist in this process."""
    gc.collect()
    return sum(type(o) is Document for o in gc.get_objects())


def test_build_stores_keep_written_documents_out_of_python(tmp_path: Path) -> None:
    """After a write returns, neither build store holds the documents it wrote as Python objects."""
    faiss = FAISSDocumentStore(path=str(tmp_path / "dense"), autosave=False)
    bm25 = BM25DocumentStore(path=str(tmp_path / "bm25"), autosave=False)
    before = live_documents()
    for start in range(0, 2000, 500):
        faiss.write_documents(documents(500, 8, start=start))
        bm25.write_documents(documents(500, None, start=start))
    assert faiss.count_documents() == bm25.count_documents() == 2000
    assert live_documents() - before < 50


CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from haystack import Document
    from components.stores.bm25.document_store import BM25DocumentStore
    from components.stores.faiss.document_store import FAISSDocumentStore

    faiss = FAISSDocumentStore(path=sys.argv[1] + "/new-dense", autosave=False)  # a new store: rows on disk
    bm25 = BM25DocumentStore(path=sys.argv[1] + "/bm25", autosave=False)  # a saved one: written rows on disk
    vector = np.ones(8, dtype=np.float32).tolist()
    k = 0
    while True:
        batch = [Document(id=f"n{k}-{i}", content=f"new words {k} " * 30, embedding=vector) for i in range(500)]
        faiss.write_documents(batch)
        bm25.write_documents(batch)
        k += 1
        if k == 3:
            print("writing", flush=True)
    """
)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ROOT (but the lock files) by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "LOCK"}


def test_a_build_killed_between_chunks_leaves_the_live_stores_and_no_temporary_file(tmp_path: Path) -> None:
    """SIGKILL while chunks go to the temporary files: saved generations are untouched, nothing is left."""
    root, scratch = tmp_path / "stores", tmp_path / "tmp"
    scratch.mkdir()
    FAISSDocumentStore(path=str(root / "dense")).write_documents(documents(40, 8))
    BM25DocumentStore(path=str(root / "bm25")).write_documents(documents(40, None))
    before = snapshot(root)
    env = {**os.environ, "TMPDIR": str(scratch), "SQLITE_TMPDIR": str(scratch)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], cwd=REPO, env=env, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"writing"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        child.kill()
    assert snapshot(root) == before
    assert not list(scratch.iterdir())
    assert [d.id for d in FAISSDocumentStore(path=str(root / "dense")).filter_documents()] == [
        f"d{i}" for i in range(40)
    ]
    assert BM25DocumentStore(path=str(root / "bm25")).count_documents() == 40


def test_spill_checkpoint_survives_a_clear_and_later_writes(tmp_path: Path) -> None:
    """A failed transaction's restore returns the spill to its checkpoint even after a clear and new lines."""
    spill = DocumentSpill(tmp_path / "absent" / "store")
    first = {d.id: d for d in documents(3, None)}
    spill.put({d.id: document_line(d, i) for i, d in enumerate(first.values())})
    state = spill.checkpoint()
    spill.clear()
    spill.put({d.id: document_line(d, i) for i, d in enumerate(documents(2, None, start=10))})
    assert "d0" not in spill
    spill.restore(state)
    assert seen(spill.get(["d2", "d0"])) == seen([first["d2"], first["d0"]])
    assert "d10" not in spill
    assert list(tmp_path.iterdir()) == []  # the file has no name


FULL_DISK_CHILD = textwrap.dedent(
    """
    import resource, signal, sys
    from haystack import Document
    from components.stores.faiss.document_store import FAISSDocumentStore

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))  # files stop growing at 200 kB
    store = FAISSDocumentStore(path=sys.argv[1], autosave=False)
    for k in range(100):
        store.write_documents([Document(id=f"{k}-{i}", content="words " * 200, embedding=[1.0] * 8) for i in range(50)])
    """
)


def test_a_full_disk_under_the_temporary_table_is_an_os_error_naming_sqlite_tmpdir(tmp_path: Path) -> None:
    """The FAISS build store's temporary table cannot grow: an OSError saying where it lies, no traceback maze."""
    env = {**os.environ, "SQLITE_TMPDIR": str(tmp_path)}
    argv = [sys.executable, "-c", FULL_DISK_CHILD, str(tmp_path / "dense")]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert "OSError: cannot write the temporary document table of the FAISS store being built" in done.stderr
    assert "point SQLITE_TMPDIR at a disk with room" in done.stderr
    assert not (tmp_path / "dense").exists()
