"""The sparse store's searches: Haystack's ``sparse_embedding_retrieval`` and its batch form, with async twins.

A mixin of ``SparseDocumentStore`` (which loads the index, holds the lock and the documents), kept apart so each
file stays readable. A search scores a snapshot of the index outside the lock (states are immutable:
``components.stores.sparse.index``), then looks its hits up under the lock, leaving out any deleted meanwhile.
"""

import json
import threading
from typing import Any

import numpy as np
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from components.checks import check_filters, check_top_k
from components.stores.async_twins import twin
from components.stores.bm25.documents import StoredDocuments
from components.stores.hits import hit_documents
from components.stores.sparse.index import IndexState
from components.stores.sparse.vectors import check_sparse

_MASK_CACHE_SIZE = 8


class SparseSearches:
    """Searches over ``_ready()``'s index and ``_documents``; the store provides both, its lock and the mask cache."""

    _lock: threading.RLock
    _documents: StoredDocuments
    _masks: dict[tuple[int, str], np.ndarray]

    def _ready(self) -> IndexState:
        """The loaded index (the store's)."""
        raise NotImplementedError

    def _with_vectors(self, state: IndexState, ids: list[str], cache: bool = False) -> list[Document]:
        """Copies of stored documents with their vectors (the store's)."""
        raise NotImplementedError

    def sparse_embedding_retrieval(
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        return_embedding: bool = False,
    ) -> list[Document]:
        """Best ``top_k`` documents for one query vector (see ``sparse_embedding_retrieval_batch``)."""
        return self.sparse_embedding_retrieval_batch([query_sparse_embedding], filters, top_k, return_embedding)[0]

    def sparse_embedding_retrieval_batch(
        self,
        query_sparse_embeddings: list[SparseEmbedding],
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        return_embedding: bool = False,
    ) -> list[list[Document]]:
        """
        Best ``top_k`` documents per query vector, by dot product, best first (ties: the earlier written first).

        Only documents sharing a term with the query come back; with ``filters``, exactly ``top_k`` matching
        ones when that many match and share a term. Each hit is a new Document with ``score`` set and
        ``meta["retrieval_type"] = "sparse"``; with ``return_embedding`` also its ``sparse_embedding`` (off by
        default, as in FAISS and Haystack's stores: a SPLADE vector holds hundreds of terms, which a served
        search would otherwise send with every hit).

        :raises ValueError: A query vector that is not a valid SparseEmbedding (``query_sparse_embeddings[i]``), or
            ``top_k`` not an integer in [1, 10000].
        :raises FilterError: If ``filters`` is not in Haystack's filter syntax.
        """
        if not isinstance(query_sparse_embeddings, list):
            raise ValueError("query_sparse_embeddings must be a list of SparseEmbeddings")
        for i, query in enumerate(query_sparse_embeddings):
            check_sparse(query, f"query_sparse_embeddings[{i}]")
        check_top_k(top_k)
        check_filters(filters)
        with self._lock:
            state = self._ready()
            accept = self._mask(state, filters) if filters else None
        found = [state.search(query, top_k, accept) for query in query_sparse_embeddings]
        with self._lock:
            live = self._ready()
            results = []
            for rows, scores in found:
                ids = [state.ids[r] for r in rows]
                kept = [(i, float(s)) for i, s in zip(ids, scores, strict=True) if i in live]
                hit_ids = [i for i, _ in kept]
                bases = self._with_vectors(live, hit_ids) if return_embedding else self._documents.get(hit_ids)
                results.append(hit_documents(bases, [s for _, s in kept], "sparse"))
        return results

    sparse_embedding_retrieval_async = twin(sparse_embedding_retrieval)
    sparse_embedding_retrieval_batch_async = twin(sparse_embedding_retrieval_batch)

    def _mask(self, state: IndexState, filters: dict[str, Any]) -> np.ndarray:
        """Which rows of STATE match ``filters`` (dead rows: false); cached per state version and filter (the store
        clears the cache when documents change under the same state: ``update_by_filter``, a rollback)."""
        key = (state.version, json.dumps(filters, sort_keys=True, default=str))
        if key not in self._masks:
            if len(self._masks) >= _MASK_CACHE_SIZE:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = self._documents.mask(list(state.ids), filters, state.alive)
        return self._masks[key]
