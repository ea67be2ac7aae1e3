"""The documents of a saved FAISS store, read by another store over the same corpus (the BM25 store).

A hybrid search holds a FAISS store and a BM25 store of one corpus; the BM25 index keeps only document ids
and reads the documents from the FAISS store's live generation, so the corpus is held in memory once:

- when a FAISSDocumentStore of this process has that very generation loaded and unchanged, its table answers
  (a dict lookup per hit still decoded, as fast as the FAISS store's own hits; a store opened from disk reads
  the others from the same file, ``saved_document_table``), so both stores share one memory of decoded ones;
- otherwise the generation's ``documents.sqlite`` is opened read-only and documents are read by id as hits
  need them (no FAISS index, no copy of the corpus). The last documents read stay decoded in memory
  (``components.stores.recent_documents``).

Generations are never modified once written (a save writes a new one), so both sources answer the same.
"""

import sqlite3
import threading
import weakref
from pathlib import Path
from typing import cast

from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores.crash_safe_generations import Generations, verified
from components.stores.faiss.sqlite_document_table import BATCH, SQLiteDocumentTable, decoded
from components.stores.recent_documents import RecentDocuments

FAISS_GENERATIONS = Generations(kind="FAISS store", digits=8)  # gen-00000001, ...
DOCUMENTS_FILE = "documents.sqlite"
_LOADED: "weakref.WeakValueDictionary[Path, SQLiteDocumentTable]" = weakref.WeakValueDictionary()
_LOADED_LOCK = threading.Lock()


def share(generation: Path, table: SQLiteDocumentTable) -> None:
    """Offer ``table``, which holds exactly the documents of ``generation``, to readers of this process."""
    with _LOADED_LOCK:
        _LOADED[generation.resolve()] = table


def unshare(table: SQLiteDocumentTable) -> None:
    """Withdraw ``table`` before it changes (it no longer equals the generation it was loaded from)."""
    with _LOADED_LOCK:
        for generation in [g for g, t in _LOADED.items() if t is table]:
            del _LOADED[generation]


class SavedDocuments:
    """Documents by id of the live generation of the FAISS store at ``store_path``, read-only."""

    def __init__(self, store_path: str) -> None:
        """
        Open the live generation's document file (read-only; the generation stays readable after a newer save),
        once its bytes are verified against the generation's manifest (sha256).

        :raises DocumentStoreError: If ``store_path`` holds no saved FAISS store, or its file was changed, naming it.
        """
        self.path = store_path
        found = FAISS_GENERATIONS.read_current(Path(store_path))
        if found is None:
            raise DocumentStoreError(f"{store_path}: no saved FAISS store there (document_store_path)")
        self._generation = found[0].resolve()
        file = verified(self._generation, found[1], DOCUMENTS_FILE)  # hashed once per process (file_digests)
        try:
            self._db = sqlite3.connect(f"{file.as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
            self._db.execute("SELECT count(*) FROM documents").fetchone()  # opens the file now
        except sqlite3.DatabaseError as exc:
            raise DocumentStoreError(f"{file}: cannot read the document table ({exc})") from exc
        self._lock = threading.Lock()
        self._decoded = RecentDocuments()  # shared: callers copy before changing, as the table's

    def get(self, ids: list[str]) -> list[Document]:
        """These documents, in this order; every id must be stored (else DocumentStoreError naming the ids)."""
        loaded = _LOADED.get(self._generation)
        docs = loaded.documents_of(ids) if loaded is not None else self._decoded.get_many(ids)
        if all(docs):  # no None: all found without reading (the usual case)
            return cast(list[Document], docs)
        missing = [doc_id for doc_id, doc in zip(ids, docs, strict=True) if doc is None]
        found = {doc_id: doc for doc_id, doc in zip(missing, self._decoded.get_many(missing), strict=True) if doc}
        missing = [doc_id for doc_id in dict.fromkeys(missing) if doc_id not in found]
        if missing:
            found.update(self._read(missing))
        lacking = [doc_id for doc_id in missing if doc_id not in found]
        if lacking:
            raise DocumentStoreError(
                f"document store at {self.path} (document_store_path) lacks documents the index beside it (BM25 or "
                f"learned sparse) holds ({len(lacking)} ids, e.g. {lacking[:5]}): both must index the same corpus"
            )
        return [doc if doc is not None else found[doc_id] for doc_id, doc in zip(ids, docs, strict=True)]

    def _read(self, ids: list[str]) -> dict[str, Document]:
        """Read and decode documents by id from the SQLite file."""
        found: dict[str, Document] = {}
        with self._lock:
            for start in range(0, len(ids), BATCH):
                chunk = ids[start : start + BATCH]
                query = f"SELECT id, document FROM documents WHERE id IN ({','.join('?' * len(chunk))})"
                try:
                    for doc_id, text in self._db.execute(query, chunk):
                        found[doc_id] = decoded(text)
                except (sqlite3.DatabaseError, ValueError, TypeError, KeyError) as exc:
                    raise DocumentStoreError(f"{self._generation / DOCUMENTS_FILE}: corrupted ({exc})") from exc
            self._decoded.remember(found)
        return found
