"""How FAISSDocumentStore turns writes and deletes into SQLite rows and FAISS vectors.

Each document gets a new int64 row (``_next_row`` counts up, never reused): the row is its SQLite key and its
FAISS id. An overwrite deletes the old row and inserts a new one. These methods run inside the store's
transactions (``components.stores.transactions``) with its lock held; they assume checked inputs.
"""

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as np
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.atomic_files import temp_sibling
from components.stores.faiss.disk_document_table import DiskDocumentTable
from components.stores.faiss.shared_documents import DOCUMENTS_FILE
from components.stores.faiss.sqlite_document_table import IN_INDEX, SQLiteDocumentTable
from components.stores.faiss.vector_index import FAISSVectorIndex, build_faiss_index, keeps_exact_vectors

TRAINING_SAMPLE = 100_000  # rows of a .npy used to train an IVF index before the bulk add
T = TypeVar("T")


class RowWrites:
    """Mixin of FAISSDocumentStore: documents into rows and vectors (``searches`` reads them)."""

    metric: str
    index_factory: str
    search_params: dict[str, float] | None
    embedding_dim: int | None
    index_chunk_size: int
    index_use_gpu: bool
    path: str | None
    autosave: bool
    _vectors: FAISSVectorIndex | None
    _next_row: int
    _in_place: bool
    _lock: threading.RLock

    def _ready(self) -> SQLiteDocumentTable:
        """The store's document table, loaded on first use (provided by the store)."""
        raise NotImplementedError

    if TYPE_CHECKING:  # provided by the store (a stub here would shadow TransactionalStore's in the MRO)

        def _mutate(self, change: Callable[[], tuple[T, bool]]) -> T:
            """Run ``change`` as one all-or-nothing transaction."""

    def _check_new_ids(self, documents: Sequence[Document]) -> None:
        seen: set[str] = set()
        for position, document in enumerate(documents):
            if document.id in seen or self._ready().row_of(document.id) is not None:
                raise DuplicateDocumentError(f"ID '{document.id}' (documents[{position}]) already exists.")
            seen.add(document.id)

    def _write(
        self,
        documents: Sequence[Document],
        texts: Sequence[str],
        vectors: np.ndarray,
        vector_of: np.ndarray,
        policy: DuplicatePolicy,
    ) -> int:
        """Apply ``policy``, then insert the surviving documents under new rows and index their vectors."""
        table = self._ready()
        policy = DuplicatePolicy(policy)
        policy = DuplicatePolicy.FAIL if policy == DuplicatePolicy.NONE else policy
        stored = stored_rows(table, [document.id for document in documents])
        chosen: dict[str, int] = {}  # id -> position in documents
        for position, document in enumerate(documents):
            if document.id in chosen or document.id in stored:
                if policy == DuplicatePolicy.FAIL:
                    raise DuplicateDocumentError(f"ID '{document.id}' (documents[{position}]) already exists.")
                if policy == DuplicatePolicy.SKIP:
                    continue
            chosen[document.id] = position
        positions = np.fromiter(chosen.values(), dtype=np.int64, count=len(chosen))
        texts = [texts[position] for position in positions]
        picks = vector_of[positions]
        if keeps_exact_vectors(self.index_factory, self.metric):  # the index holds each vector as it is written
            blobs: list[bytes | None] = [None if pick < 0 else IN_INDEX for pick in picks.tolist()]
        else:
            blobs = blobs_of(vectors, picks)
        rows = np.arange(self._next_row, self._next_row + len(positions), dtype=np.int64)
        self._delete_rows([stored[document_id] for document_id in chosen if document_id in stored])
        table.insert(list(zip(rows.tolist(), chosen, texts, blobs, strict=True)))
        self._next_row += len(rows)
        if (picks >= 0).any():
            self._add_vectors(rows[picks >= 0], vectors[picks[picks >= 0]])
        return len(rows)

    def _vector_index(self, dim: int) -> FAISSVectorIndex:
        """The FAISS index, built empty on first need."""
        if self._vectors is None:
            index = build_faiss_index(dim, self.metric, self.index_factory, self.search_params)
            self._vectors = FAISSVectorIndex(index, self.metric, self.index_chunk_size, self.index_use_gpu, np.empty(0))
            self.embedding_dim = dim
        return self._vectors

    def _add_vectors(self, rows: np.ndarray, matrix: np.ndarray) -> None:
        vectors = self._vector_index(matrix.shape[1])
        if vectors.is_trained:
            vectors.add(rows, matrix)
        else:
            self._index_stored_vectors(vectors)

    def _index_stored_vectors(self, vectors: FAISSVectorIndex) -> None:
        """Train (if needed and possible) and fill ``vectors`` from every embedding in SQLite."""
        table = self._ready()
        rows = table.embedded_rows()
        matrix = table.embeddings(rows, vectors.dim)
        if vectors.train(matrix):
            vectors.add(rows, matrix)

    def _delete_rows(self, rows: list[int]) -> None:
        if not rows:
            return
        table = self._ready()
        embedded = [row for row in rows if table.has_embedding(row)]
        table.delete(rows)
        if self._vectors is not None and self._vectors.is_trained:
            self._vectors.remove(embedded)
            if self._vectors.needs_rebuild:
                dim = self._vectors.dim
                self._vectors = None
                self._index_stored_vectors(self._vector_index(dim))

    def _new_table(self) -> SQLiteDocumentTable:
        """An empty table: on disk for a store built into a new directory and saved once (``autosave`` off), so
        that a build's memory does not grow with its corpus (``disk_document_table``); else in memory."""
        if self.path is not None and not self.autosave:
            return DiskDocumentTable(self._building_file() if self._in_place else None)
        return SQLiteDocumentTable()

    def _building_file(self) -> Path:
        """A new file in the store's directory for the table being built in place (``write_in_place``), named as
        a temporary file, which a generation never lists and a directory without one may hold."""
        root = Path(cast(str, self.path))
        root.mkdir(parents=True, exist_ok=True)
        return temp_sibling(root / DOCUMENTS_FILE)


def stored_rows(table: SQLiteDocumentTable, ids: list[str]) -> dict[str, int]:
    """The rows already holding any of IDS, by id: one query per batch of ids for a table on disk."""
    if isinstance(table, DiskDocumentTable):
        return table.rows_of(ids)
    return {document_id: row for document_id in ids if (row := table.row_of(document_id)) is not None}


def blobs_of(vectors: np.ndarray, picks: np.ndarray) -> list[bytes | None]:
    """The little-endian float32 blob of row ``pick`` of VECTORS for each of PICKS; None where ``pick`` is -1."""
    have = np.flatnonzero(picks >= 0)
    if not len(have):
        return [None] * len(picks)
    rows = np.ascontiguousarray(vectors[picks[have]], dtype="<f4")
    found = cast(list[bytes | None], rows.view(np.dtype((np.void, rows.shape[1] * 4))).ravel().tolist())
    if len(have) == len(picks):
        return found
    blobs: list[bytes | None] = [None] * len(picks)
    for position, blob in zip(have.tolist(), found, strict=True):
        blobs[position] = blob
    return blobs
