"""Helpers (no tests) shared by the tests/components/stores/ tests: one store of each kind, documents, fingerprints."""

import hashlib
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from haystack import Document

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore

KINDS = ("bm25", "faiss")


def make_store(kind: str, path: Path | None, **kwargs: Any) -> Any:
    """A BM25 or FAISS store at ``path`` (None: in memory)."""
    cls = BM25DocumentStore if kind == "bm25" else FAISSDocumentStore
    return cls(path=None if path is None else str(path), **kwargs)


def doc(doc_id: str, content: str, **meta: Any) -> Document:
    """A document with a small embedding derived from its id (ignored by the BM25 store)."""
    return Document(id=doc_id, content=content, meta=meta, embedding=[1.0, float(len(doc_id)), float(len(content))])


def search(store: Any, query: str = "planet") -> list[tuple[str, float]]:
    """Ids and scores of a search, BM25 or dense, whichever the store does."""
    if isinstance(store, BM25DocumentStore):
        hits = store.bm25_retrieval(query, top_k=10)
    else:
        hits = store.search([[1.0, 1.0, 10.0]], top_k=10)[0]
    return [(d.id, round(d.score, 5)) for d in hits]


def state(store: Any) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """What a user sees of a store: every document's content and meta, by id."""
    return {d.id: (d.content, d.meta) for d in store.filter_documents()}


def fingerprint(path: Path) -> dict[str, str]:
    """Hash of every file of a store directory except its LOCK, by relative path."""
    return {
        str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(path.rglob("*"))
        if f.is_file() and f.name != "LOCK"
    }


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """
    Make every file write of this process beyond ``limit`` bytes fail with EFBIG, as a full disk would
    (RLIMIT_FSIZE holds for root too, where a read-only chmod does not stop writes).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
