"""FAISSDocumentStore: vectors in FAISS, documents in SQLite, both saved crash-safely in one directory."""

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.errors import DocumentStoreError, MissingDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter

from components.checks import check_filters
from components.stores.async_twins import DocumentStoreAsyncTwins
from components.stores.document_checks import check_document_list, check_meta_storable, encode_document
from components.stores.document_pages import DocumentPages
from components.stores.faiss.checks import check_init, stack_embeddings
from components.stores.faiss.matrix_writes import MatrixWrites
from components.stores.faiss.saved_generations import SavedGenerations
from components.stores.faiss.searches import FAISSSearches
from components.stores.faiss.shared_documents import FAISS_GENERATIONS, unshare
from components.stores.faiss.sqlite_document_table import SQLiteDocumentTable
from components.stores.faiss.vector_index import FAISSVectorIndex
from components.stores.metadata_queries import MetadataQueries
from components.stores.transactions import SingleWriter, TransactionalStore

T = TypeVar("T")


class FAISSDocumentStore(
    SavedGenerations,
    FAISSSearches,
    MatrixWrites,
    TransactionalStore,
    DocumentStoreAsyncTwins,
    MetadataQueries,
    DocumentPages,
):
    """
    A Haystack DocumentStore with FAISS vector search, metadata pre-filtering and batch search.

    - Documents (content, meta, blob, sparse embedding) live in SQLite; vectors live in FAISS under int64 ids
      that are the documents' SQLite rows. An index that changes or approximates vectors (cosine, HNSW, IVF,
      PQ, SQ) has each embedding kept in SQLite too (float32); an exact Flat index is where they are read back
      from (``IN_INDEX``: the table holds no second copy). Embeddings are kept as float32, so they come back
      rounded to float32 (exact for embeddings that came from a float32 model).
    - Documents without embedding are stored and returned by ``filter_documents`` but never by ``search``.
    - ``search`` scores are higher-is-better: inner product, cosine similarity, or for ``l2`` the negated
      squared Euclidean distance (0 is an identical vector).
    - With ``path`` set, the store lives in that directory (``components.stores.crash_safe_generations``),
      is loaded lazily on first use, and with ``autosave`` every mutating call ends with a save. Each mutating
      call is all-or-nothing and has one writer (``components.stores.transactions``). With a path and
      ``autosave`` off, a store that starts empty keeps its documents in a temporary SQLite file until its
      save (``disk_document_table``), so that building a large index does not hold the corpus in memory. A
      store opened from a saved generation reads its documents from that generation's file as hits need them,
      keeping only the last ones decoded (``saved_document_table``): searching holds the vectors, not the corpus.
    - Every public method has an ``*_async`` twin for async pipelines and Hayhooks.
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
        self._writer = SingleWriter(FAISS_GENERATIONS)
        self._table: SQLiteDocumentTable | None = None  # None until loaded or created on first use
        self._vectors: FAISSVectorIndex | None = None  # None until the first vector (or after delete_all)
        self._info: dict[str, Any] = {}
        self._next_row = 0
        self._in_place = False  # write_in_place: the table being built is a file in path, linked at save

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
        found = FAISS_GENERATIONS.read_current(Path(path))
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
        info = dict(value)

        def change() -> tuple[None, bool]:
            self._info = info
            return None, True

        self._mutate(change)

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

    def _document_pages(self, filters: dict[str, Any] | None, page_size: int) -> Iterator[list[Document]]:
        """Pages of the documents matching ``filters``, with embeddings (``DocumentPages``): the table's rows in
        order, a page at a time under the lock, up to the last row stored when the walk began (documents written
        since are not shown, those deleted since are skipped)."""
        with self._lock:
            self._ready()  # loads a saved store, whose next row is then known
            after, end = -1, self._next_row
        while True:
            with self._lock:
                table = self._ready()
                rows = [row for row in table.rows_after(after, page_size) if row < end]
                documents = table.documents(rows, with_embedding=True)
            if not rows:
                return
            after = rows[-1]
            yield [d for d in documents if not filters or document_matches_filter(filters, d)]

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """Number of documents matching ``filters``."""
        check_filters(filters)
        with self._lock:
            return len(self._ready().filter_rows(filters))

    def get_documents_by_id(self, ids: Sequence[str], return_embedding: bool = False) -> list[Document]:
        """Documents by id, in the order asked; raises MissingDocumentError naming ids that are not stored."""
        with self._lock:
            table = self._ready()
            row_of = table.rows_of(ids)
            missing = [document_id for document_id in ids if document_id not in row_of]
            if missing:
                raise MissingDocumentError(f"{len(missing)} of the ids are not in this store, e.g. {missing[:5]}")
            return table.documents([row_of[document_id] for document_id in ids], with_embedding=return_embedding)

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write documents, all or none (NONE means FAIL: a duplicate writes nothing). Returns the count written."""
        texts = [encode_document(d, i) for i, d in enumerate(check_document_list(documents))]

        def change() -> tuple[int, bool]:
            vectors, vector_of = stack_embeddings(documents, self.embedding_dim)
            written = self._write(documents, texts, vectors, vector_of, policy)
            return written, written > 0

        return self._mutate(change, rows_only=True)

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete documents by id from SQLite and FAISS, all or none; unknown ids are ignored."""

        def change() -> tuple[None, bool]:
            table = self._ready()
            rows = list(table.rows_of(document_ids).values())  # an id given twice is deleted once
            self._delete_rows(rows)
            return None, bool(rows)

        self._mutate(change, rows_only=True)

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching ``filters``, all or none; returns how many."""
        check_filters(filters)

        def change() -> tuple[int, bool]:
            rows = self._ready().filter_rows(filters)
            self._delete_rows(rows)
            return len(rows), bool(rows)

        return self._mutate(change, rows_only=True)

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Merge ``meta`` into the meta of the documents matching ``filters``, all or none; returns how many."""
        check_filters(filters)
        check_meta_storable(meta)

        def change() -> tuple[int, bool]:
            table = self._ready()
            rows = table.filter_rows(filters)
            table.update_meta(rows, meta)
            return len(rows), bool(rows)

        return self._mutate(change)

    def delete_all_documents(self) -> None:
        """Remove every document and vector, all or none; settings, embedding_dim and ``info`` are kept."""

        def change() -> tuple[None, bool]:
            self._ready().clear()
            self._vectors = None
            return None, True

        self._mutate(change)

    def _mutate(self, change: Callable[[], tuple[T, bool]], rows_only: bool = False) -> T:
        """Withdraw the table from readers of its generation (it is about to change), then run the transaction
        (ROWS_ONLY: ``TenantCaching._mutate``)."""
        with self._lock:
            unshare(self._ready())
            return super()._mutate(change, rows_only)

    def _ready(self) -> SQLiteDocumentTable:
        """The document table, loading the saved store on first use."""
        table = self._table
        if table is None:
            found = FAISS_GENERATIONS.read_current(Path(self.path)) if self.path is not None else None
            if found is not None:
                table = self._load(*found)
            else:
                table = self._table = self._new_table()
            table.vectors_in_index = self._exact_vectors
            if self.path is not None:
                self._writer.seen(Path(self.path), found)
        return table
