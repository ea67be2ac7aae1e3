"""FAISSDocumentStore: vectors in FAISS, documents in SQLite, both saved crash-safely in one directory."""

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError, MissingDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.stores.crash_safe_generations import MANIFEST, Generations
from components.stores.faiss.sqlite_document_table import SQLiteDocumentTable, encode
from components.stores.faiss.async_twins import FAISSAsyncTwins
from components.stores.faiss.checks import (
    FORMAT,
    check_documents,
    check_filters,
    check_finite,
    check_init,
    check_manifest,
    check_matrix,
    check_queries,
    stack_embeddings,
)
from components.stores.faiss.vector_index import FAISSVectorIndex, build_faiss_index, exact_search

DOCUMENTS_FILE = "documents.sqlite"
_GENERATIONS = Generations(kind="FAISS store", digits=8)  # gen-00000001, ...
_TRAINING_SAMPLE = 100_000  # rows of a .npy used to train an IVF index before the bulk add


class FAISSDocumentStore(FAISSAsyncTwins):
    """
    A Haystack DocumentStore with FAISS vector search, metadata pre-filtering and batch search.

    - Documents (content, meta, blob, sparse embedding) and their embeddings (float32) live in SQLite; vectors
      also live in FAISS under int64 ids that are the documents' SQLite rows. Embeddings are kept as float32,
      so they come back rounded to float32 (exact for embeddings that came from a float32 model).
    - Documents without embedding are stored and returned by ``filter_documents`` but never by ``search``.
    - ``search`` scores are higher-is-better: inner product, cosine similarity, or for ``l2`` the negated
      squared Euclidean distance (0 is an identical vector).
    - With ``path`` set, the store lives in that directory (see ``_generations`` for the crash-safe
      layout), is loaded lazily on first use, and with ``autosave`` every mutating call ends with ``save()``.
      One process should write a given directory at a time.
    - Every public method has an ``*_async`` twin (``FAISSAsyncTwins``) for async pipelines and Hayhooks.
    """

    def __init__(
        self,
        path: str | None = None,
        metric: str = "inner_product",
        index_factory: str = "Flat",
        embedding_dim: int | None = None,
        index_chunk_size: int = 10000,
        index_use_gpu: bool = False,
        autosave: bool = True,
        search_params: dict[str, float] | None = None,
    ) -> None:
        """
        :param path: directory holding the store; None keeps it in memory only.
        :param metric: "inner_product" (default), "cosine" or "l2".
        :param index_factory: FAISS factory string ("Flat", "HNSW32", "IVF100,Flat", ...). IVF indexes are
            trained on the first write (or ``.npy``) with enough vectors; until then search is exact.
        :param embedding_dim: vector size; inferred from the first write when None.
        :param index_chunk_size: vectors added to FAISS per call (bounds temporary memory).
        :param index_use_gpu: search on all visible GPUs (sharded, float16); falls back to CPU with a warning.
        :param autosave: with a path, save after every mutating call.
        :param search_params: FAISS search-time parameters such as ``{"nprobe": 16}`` or ``{"efSearch": 128}``.
        """
        check_init(path, metric, index_factory, embedding_dim, index_chunk_size, search_params)
        self.path = str(path) if path is not None else None
        self.metric = metric
        self.index_factory = index_factory
        self.embedding_dim = embedding_dim
        self.index_chunk_size = index_chunk_size
        self.index_use_gpu = index_use_gpu
        self.autosave = autosave
        self.search_params = search_params
        self._lock = threading.RLock()
        self._table: SQLiteDocumentTable | None = None  # None until loaded or created on first use
        self._vectors: FAISSVectorIndex | None = None  # None until the first vector (or after delete_all)
        self._info: dict[str, Any] = {}
        self._next_row = 0

    def to_dict(self) -> dict[str, Any]:
        """Serialise the store's settings (not its documents: those live in ``path``)."""
        return default_to_dict(
            self,
            path=self.path,
            metric=self.metric,
            index_factory=self.index_factory,
            embedding_dim=self.embedding_dim,
            index_chunk_size=self.index_chunk_size,
            index_use_gpu=self.index_use_gpu,
            autosave=self.autosave,
            search_params=self.search_params,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FAISSDocumentStore":
        """Rebuild a store from ``to_dict`` output; a saved ``path`` is loaded on first use."""
        return default_from_dict(cls, data)

    @classmethod
    def load(cls, path: str, **overrides: Any) -> "FAISSDocumentStore":
        """Open a saved store with the metric, index_factory and embedding_dim it was built with."""
        found = _GENERATIONS.read_current(Path(path))
        if found is None:
            raise DocumentStoreError(f"{Path(path) / 'CURRENT'}: missing, no saved FAISS store at {path}")
        manifest = found[1]
        saved = {key: manifest.get(key) for key in ("metric", "index_factory", "embedding_dim")}
        return cls(path=path, **{**saved, **overrides})

    @property
    def info(self) -> dict[str, Any]:
        """JSON metadata saved with the index (e.g. the embedding model); mutate it, then call ``save()``."""
        with self._lock:
            self._ready()
            return self._info

    @info.setter
    def info(self, value: dict[str, Any]) -> None:
        try:
            json.dumps(value)  # fail now, not at save time
        except (TypeError, ValueError) as exc:
            raise ValueError(f"info must be a JSON-serialisable dict ({exc})") from exc
        with self._lock:
            self._ready()
            self._info = dict(value)
            self._autosave()

    def count_documents(self) -> int:
        """Number of stored documents, with or without embedding."""
        with self._lock:
            return len(self._ready())

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents matching Haystack ``filters`` (all when None), in insertion order, with embeddings."""
        check_filters(filters)
        with self._lock:
            table = self._ready()
            return table.documents(table.filter_rows(filters), with_embedding=True)

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """Number of documents matching ``filters``."""
        check_filters(filters)
        with self._lock:
            return len(self._ready().filter_rows(filters))

    def get_documents_by_id(self, ids: Sequence[str], return_embedding: bool = False) -> list[Document]:
        """Documents by id, in the order asked; raises MissingDocumentError naming ids that are not stored."""
        with self._lock:
            table = self._ready()
            rows = [table.row_of(document_id) for document_id in ids]
            missing = [document_id for document_id, row in zip(ids, rows, strict=True) if row is None]
            if missing:
                raise MissingDocumentError(f"{len(missing)} of the ids are not in this store, e.g. {missing[:5]}")
            return table.documents(rows, with_embedding=return_embedding)

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write documents (NONE means FAIL); a FAIL raises before anything is written. Returns the count written."""
        check_documents(documents)
        with self._lock:
            self._ready()
            vectors, vector_of = stack_embeddings(documents, self.embedding_dim)
            written = self._write(documents, vectors, vector_of, policy)
            self._autosave()
            return written

    def write_embeddings(
        self, documents: list[Document], embeddings: np.ndarray, policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Write documents whose embeddings are the rows of a float (N, dim) array (e.g. a memory-mapped .npy)."""
        return self._write_matrix(documents, embeddings, policy, source="embeddings")

    def from_npy(self, documents: list[Document], npy_path: str, policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write documents with row i of the float32 (N, dim) ``.npy`` file as document i's embedding."""
        try:
            matrix = np.load(npy_path, mmap_mode="r")
        except (ValueError, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise ValueError(f"{npy_path}: not a readable .npy array ({exc})") from exc
        return self._write_matrix(documents, matrix, policy, source=str(npy_path))

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete documents by id from SQLite and FAISS; unknown ids are ignored."""
        with self._lock:
            table = self._ready()
            rows = [row for document_id in document_ids if (row := table.row_of(document_id)) is not None]
            if rows:
                self._delete_rows(rows)
                self._autosave()

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching ``filters``; returns how many."""
        check_filters(filters)
        with self._lock:
            rows = self._ready().filter_rows(filters)
            if rows:
                self._delete_rows(rows)
                self._autosave()
            return len(rows)

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Merge ``meta`` into the meta of the documents matching ``filters``; returns how many."""
        check_filters(filters)
        with self._lock:
            table = self._ready()
            rows = table.filter_rows(filters)
            table.update_meta(rows, meta)
            if rows:
                self._autosave()
            return len(rows)

    def delete_all_documents(self) -> None:
        """Remove every document and vector; settings, embedding_dim and ``info`` are kept."""
        with self._lock:
            self._ready().clear()
            self._vectors = None
            self._autosave()

    def search(
        self,
        query_embeddings: np.ndarray,
        top_k: int,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
    ) -> list[list[Document]]:
        """
        Nearest documents for each query, from one vectorised FAISS call.

        :param query_embeddings: float32 (Q, dim) matrix.
        :param top_k: hits per query (at least 1); fewer only when fewer documents match.
        :param filters: Haystack filters; matching rows are searched exactly with a FAISS IDSelector.
        :returns: per query, new Documents with ``score`` and ``meta["retrieval_type"] = "dense"``.
        """
        if not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
        check_filters(filters)
        with self._lock:
            table = self._ready()
            queries = check_queries(query_embeddings, self.embedding_dim)
            candidates = None
            if filters:
                matching = table.filter_rows(filters)
                candidates = np.array([row for row in matching if table.has_embedding(row)], dtype=np.int64)
            scores, rows = self._nearest(queries, top_k, candidates)
            embeddings = table.embedding_lists(np.unique(rows).tolist()) if return_embedding else {}
            return [table.hits(r, s, embeddings) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]

    def save(self) -> None:
        """Write the store as a new generation of ``path`` (crash-safe); a no-op when it was never loaded."""
        if self.path is None:
            raise ValueError("save(): this FAISSDocumentStore has path=None (in memory only); give it a path")
        with self._lock:
            if self._table is not None:
                _GENERATIONS.write(Path(self.path), self._write_generation)

    def _autosave(self) -> None:
        if self.autosave and self.path is not None:
            self.save()

    def _ready(self) -> SQLiteDocumentTable:
        """The document table, loading the saved store on first use."""
        if self._table is None:
            found = _GENERATIONS.read_current(Path(self.path)) if self.path is not None else None
            if found is not None:
                self._load(*found)
            else:
                self._table = SQLiteDocumentTable()
        return self._table

    def _load(self, generation: Path, manifest: dict[str, Any]) -> None:
        settings = {"metric": self.metric, "index_factory": self.index_factory, "embedding_dim": self.embedding_dim}
        check_manifest(manifest, generation / MANIFEST, settings)
        table = SQLiteDocumentTable.load_from(generation / DOCUMENTS_FILE)
        vectors = None
        if manifest["vectors"] is not None:
            vectors = FAISSVectorIndex.read(
                generation, self.metric, self.index_chunk_size, self.index_use_gpu, self.search_params
            )
        if len(table) != manifest["documents"] or (vectors.ntotal if vectors else None) != manifest["vectors"]:
            raise DocumentStoreError(f"{generation / MANIFEST}: counts disagree with the saved index and documents")
        self._table, self._vectors = table, vectors
        self._info, self._next_row = manifest["info"], manifest["next_row"]
        self.embedding_dim = manifest["embedding_dim"]

    def _write_generation(self, directory: Path) -> dict[str, Any]:
        self._table.save_to(directory / DOCUMENTS_FILE)
        if self._vectors is not None:
            self._vectors.write(directory)
        return {
            "format": FORMAT,
            "metric": self.metric,
            "index_factory": self.index_factory,
            "embedding_dim": self.embedding_dim,
            "next_row": self._next_row,
            "documents": len(self._table),
            "vectors": self._vectors.ntotal if self._vectors is not None else None,
            "info": self._info,
        }

    def _write_matrix(self, documents: list[Document], matrix: np.ndarray, policy: DuplicatePolicy, source: str) -> int:
        """Write documents with embeddings from ``matrix``, ``index_chunk_size`` rows at a time, then save once."""
        check_documents(documents)
        with self._lock:
            self._ready()
            check_matrix(matrix, len(documents), self.embedding_dim, source)
            if policy in (DuplicatePolicy.NONE, DuplicatePolicy.FAIL):
                self._check_new_ids(documents)
            self._pretrain(matrix, source)
            written = 0
            for start in range(0, len(documents), self.index_chunk_size):
                block = np.asarray(matrix[start : start + self.index_chunk_size], dtype=np.float32)
                check_finite(block, lambda row, start=start: f"{source} row {start + row}")
                written += self._write(documents[start : start + len(block)], block, np.arange(len(block)), policy)
            self._autosave()
            return written

    def _check_new_ids(self, documents: Sequence[Document]) -> None:
        seen: set[str] = set()
        for position, document in enumerate(documents):
            if document.id in seen or self._table.row_of(document.id) is not None:
                raise DuplicateDocumentError(f"ID '{document.id}' (documents[{position}]) already exists.")
            seen.add(document.id)

    def _pretrain(self, matrix: np.ndarray, source: str) -> None:
        """Train an untrained index on an even sample of ``matrix`` before a bulk write."""
        vectors = self._vector_index(matrix.shape[1])
        if not vectors.is_trained and len(matrix):
            picks = np.unique(np.linspace(0, len(matrix) - 1, min(len(matrix), _TRAINING_SAMPLE)).astype(np.int64))
            sample = np.asarray(matrix[picks], dtype=np.float32)
            check_finite(sample, lambda row: f"{source} row {picks[row]}")
            vectors.train(sample)

    def _write(self, documents: Sequence[Document], vectors: np.ndarray, vector_of: np.ndarray, policy) -> int:
        """Apply ``policy``, then insert the surviving documents under new rows and index their vectors."""
        table = self._table
        policy = DuplicatePolicy(policy)
        policy = DuplicatePolicy.FAIL if policy == DuplicatePolicy.NONE else policy
        chosen: dict[str, int] = {}  # id -> position in documents
        for position, document in enumerate(documents):
            if document.id in chosen or table.row_of(document.id) is not None:
                if policy == DuplicatePolicy.FAIL:
                    raise DuplicateDocumentError(f"ID '{document.id}' (documents[{position}]) already exists.")
                if policy == DuplicatePolicy.SKIP:
                    continue
            chosen[document.id] = position
        positions = np.fromiter(chosen.values(), dtype=np.int64, count=len(chosen))
        texts = [encode(documents[position]) for position in positions]  # raises before anything changes
        picks = vector_of[positions]
        blobs = [np.ascontiguousarray(vectors[pick], dtype="<f4").tobytes() if pick >= 0 else None for pick in picks]
        rows = np.arange(self._next_row, self._next_row + len(positions), dtype=np.int64)
        self._delete_rows([row for document_id in chosen if (row := table.row_of(document_id)) is not None])
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
            self._index_stored_vectors()

    def _index_stored_vectors(self) -> None:
        """Train (if needed and possible) and fill the index from every embedding in SQLite."""
        rows = self._table.embedded_rows()
        matrix = self._table.embeddings(rows, self.embedding_dim)
        if self._vectors.train(matrix):
            self._vectors.add(rows, matrix)

    def _delete_rows(self, rows: list[int]) -> None:
        if not rows:
            return
        embedded = [row for row in rows if self._table.has_embedding(row)]
        self._table.delete(rows)
        if self._vectors is not None and self._vectors.is_trained:
            self._vectors.remove(embedded)
            if self._vectors.needs_rebuild:
                self._vectors = None
                self._vector_index(self.embedding_dim)
                self._index_stored_vectors()

    def _nearest(self, queries: np.ndarray, k: int, candidates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(Q, <=k) scores and rows of the nearest vectors, among ``candidates`` rows when given; -1 = no hit."""
        vectors = self._vectors
        size = len(candidates) if candidates is not None else self._table.embedded_count
        if vectors is None or not size or not len(queries):
            return np.empty((len(queries), 0), np.float32), np.empty((len(queries), 0), np.int64)
        if not vectors.is_trained:  # too few vectors to train yet: all of them are searched exactly
            return self._exact(queries, k, candidates)
        k = min(k, size)
        scores, rows = vectors.search(queries, k, candidates)
        if (rows < 0).any():  # an approximate index missed hits that exist: redo those queries exactly
            short = (rows < 0).any(axis=1)
            scores[short], rows[short] = self._exact(queries[short], k, candidates)
        return scores, rows

    def _exact(self, queries: np.ndarray, k: int, candidates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Brute-force search over the stored embeddings of ``candidates`` (all embedded rows when None)."""
        pool = candidates if candidates is not None else self._table.embedded_rows()
        return exact_search(queries, k, pool, self._table.embeddings(pool, self.embedding_dim), self.metric)
