"""FAISSDocumentStore's searches: nearest rows in FAISS (exactly when the index cannot answer), then the hits.

A mixin of the store (which loads the table and the vectors and holds the lock); kept apart from the writes so
each file stays readable. ``search`` returns new Documents (``hit_documents``: one loop, no call per hit, with the
garbage collector paused); ``search_shared_hits`` the stored ones, for fusion. A tenant filter (an equality on a meta
field, alone or in an ``AND``: ``components.stores.tenants``) searches the tenant's rows only
(``components.stores.faiss.tenant_rows``), with the generic path's hits and scores; what it keeps for that is
dropped in the same hold of the store's lock as any change (``TenantCaching._mutate``).
"""

import threading
from typing import Any

import numpy as np
from haystack import Document

from components.checks import check_filters, check_top_k
from components.stores.async_twins import twin
from components.stores.faiss.checks import check_query_embeddings
from components.stores.faiss.sqlite_document_table import SQLiteDocumentTable
from components.stores.faiss.tenant_rows import FAISSTenants
from components.stores.faiss.vector_index import FAISSVectorIndex, exact_search
from components.stores.hits import SharedHits, collector_paused, hit_documents
from components.stores.tenants import TenantCaching, TenantFilter, tenant_filter


class FAISSSearches(TenantCaching[FAISSTenants]):
    """Searches over ``_ready()``'s table and ``_vectors``; the store provides both and its lock."""

    metric: str
    embedding_dim: int | None
    _vectors: FAISSVectorIndex | None
    _lock: threading.RLock

    def _ready(self) -> SQLiteDocumentTable:
        """The store's document table, loaded on first use (provided by the store)."""
        raise NotImplementedError

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
        with self._lock:
            table, rows, scores = self._search_rows(query_embeddings, top_k, filters)
            embeddings = table.embedding_lists(np.unique(rows).tolist()) if return_embedding else {}
            shared = [table.shared_hits(r, s) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]
            with collector_paused():
                found = [hit_documents(docs, hit_scores, "dense") for docs, hit_scores in shared]
        if embeddings:
            for hits, hit_rows in zip(found, rows.tolist(), strict=True):
                for document, row in zip(hits, (row for row in hit_rows if row >= 0), strict=True):
                    document.__dict__["embedding"] = embeddings.get(row)
        return found

    def search_shared_hits(
        self, query_embeddings: np.ndarray, top_k: int, filters: dict[str, Any] | None = None
    ) -> list[SharedHits]:
        """
        ``search``'s hits as the store's own Documents and their scores, per query: nothing is copied, so a fusion
        stage builds Documents only for what it keeps. The Documents are shared with the store: read them, never
        change them (``Candidates.shared`` hands out copies).
        """
        with self._lock:
            table, rows, scores = self._search_rows(query_embeddings, top_k, filters)
            return [table.shared_hits(r, s) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]

    def _search_rows(
        self, query_embeddings: np.ndarray, top_k: int, filters: dict[str, Any] | None
    ) -> tuple[SQLiteDocumentTable, np.ndarray, np.ndarray]:
        """Check a search's inputs and run it: the table, then FAISS rows and scores per query (-1: no hit)."""
        check_top_k(top_k)
        check_filters(filters)
        table = self._ready()
        queries = check_query_embeddings(query_embeddings, self.embedding_dim)
        tenant = tenant_filter(filters)
        if tenant is not None:
            scores, rows = self._tenant_nearest(table, queries, top_k, tenant)
            return table, rows, scores
        candidates = None
        if filters:
            candidates = table.with_embedding(table.filter_rows(filters))
        scores, rows = self._nearest(queries, top_k, candidates)
        return table, rows, scores

    def _tenant_nearest(
        self, table: SQLiteDocumentTable, queries: np.ndarray, k: int, tenant: TenantFilter
    ) -> tuple[np.ndarray, np.ndarray]:
        """``_nearest`` among the rows matching a tenant filter: from the tenant's own Flat index when the store's
        index is an exact Flat one and the tenant fits the budget (``FAISSTenants.flat_search``), else the shared
        FAISS index with a selector of the tenant's rows."""
        tenants = self._tenant_rows
        rows = tenants.candidates(table, self._vectors, tenant)
        vectors = self._vectors
        if vectors is not None and len(rows[1]) and len(queries) and vectors.exact_flat:
            found = tenants.flat_search(vectors, self.metric, queries, min(k, len(rows[1])), tenant, rows)
            if found is not None:
                return found
        return self._nearest(queries, k, rows[1])

    def _new_tenant_cache(self) -> FAISSTenants:
        return FAISSTenants()

    search_async = twin(search)
    search_shared_hits_async = twin(search_shared_hits)

    def _nearest(self, queries: np.ndarray, k: int, candidates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(Q, <=k) scores and rows of the nearest vectors, among ``candidates`` rows when given; -1 = no hit."""
        vectors = self._vectors
        size = len(candidates) if candidates is not None else self._ready().embedded_count
        if vectors is None or not size or not len(queries):
            return np.empty((len(queries), 0), np.float32), np.empty((len(queries), 0), np.int64)
        if not vectors.is_trained:  # too few vectors to train yet: all of them are searched exactly
            return self._exact(queries, k, candidates, vectors.dim)
        k = min(k, size)
        scores, rows = vectors.search(queries, k, candidates)
        if (rows < 0).any():  # an approximate index missed hits that exist: redo those queries exactly
            short = (rows < 0).any(axis=1)
            scores[short], rows[short] = self._exact(queries[short], k, candidates, vectors.dim)
        return scores, rows

    def _exact(
        self, queries: np.ndarray, k: int, candidates: np.ndarray | None, dim: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Brute-force search over the stored ``dim``-sized embeddings of ``candidates`` (all embedded rows if None)."""
        table = self._ready()
        pool = candidates if candidates is not None else table.embedded_rows()
        return exact_search(queries, k, pool, table.embeddings(pool, dim), self.metric)
