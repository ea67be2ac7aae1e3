"""The BM25 store's searches: Haystack's ``bm25_retrieval`` and its batch and shared-hits forms, with warm-up.

A mixin of ``BM25DocumentStore`` (which loads the index, holds the lock and the documents); kept apart so each
file stays readable. A search scores against a snapshot of the index outside the lock, then looks up the hit
documents under it, so writers wait only for the lookups. A tenant filter (an equality on a meta field, alone or in
an ``AND``: ``components.stores.tenants``) scores the tenant's documents only
(``components.stores.bm25.tenant_segments``), with the generic path's hits and scores; what it keeps for that is
dropped in the same hold of the store's lock as any change (``TenantCaching._mutate``).
"""

import itertools
import threading
from typing import Any

import numpy as np
from haystack import Document

from components.checks import check_filters, check_queries, check_query, check_top_k
from components.stores.async_twins import twin
from components.stores.bm25.documents import StoredDocuments
from components.stores.bm25.index import BM25Index, IdHits, IndexSnapshot
from components.stores.bm25.segments import MainSegment, SearchableMain
from components.stores.bm25.tenant_segments import BM25Tenants, Masks
from components.stores.bm25.tokenizers import BM25Tokenizer
from components.stores.hits import SharedHits, collector_paused, hit_documents
from components.stores.tenants import TenantCaching, tenant_filter


class BM25Searches(TenantCaching[BM25Tenants]):
    """Searches over ``_ready()``'s index and ``_documents``; the store provides both, its lock and ``backend``."""

    backend: str
    _lock: threading.RLock
    _documents: StoredDocuments
    _tokenizer: BM25Tokenizer

    def _ready(self) -> BM25Index:
        """The loaded index (the store's)."""
        raise NotImplementedError

    def _tokenizer_ready(self) -> BM25Tokenizer:
        """The tokenizer of the loaded index's settings (the store's)."""
        raise NotImplementedError

    def warm_up(self, n_threads: int = 0) -> None:
        """
        Load the index and the tokenizer now; idempotent.

        With ``backend="numba"`` this also loads (or, the first time on this machine, compiles) the numba
        kernels, with and without a filter/deletion mask, instead of during the first queries; ``n_threads``
        also starts the threads a batch search on that many threads uses. An index without a single term (every
        document only stopwords or characters the tokenizer drops) has nothing to compile for: it is ready as it
        is, and every search on it answers no hits.
        """
        index = self._ready()
        self._tokenizer.warm_up()
        snapshot = index.snapshot()
        if self.backend == "numba" and snapshot.main is not None and snapshot.vocab:
            query = [[next(iter(snapshot.vocab))]]
            everything = np.ones(snapshot.main.n_docs, dtype=bool)
            snapshot.search(query, 1, n_threads)
            snapshot.search(query, 1, n_threads, main_accept=everything)

    def bm25_retrieval(self, query: str, filters: dict[str, Any] | None = None, top_k: int = 10) -> list[Document]:
        """Best ``top_k`` documents for ``query`` (see ``bm25_retrieval_batch``)."""
        check_query(query, "query")
        return self.bm25_retrieval_batch([query], filters=filters, top_k=top_k)[0]

    def bm25_retrieval_batch(
        self, queries: list[str], filters: dict[str, Any] | None = None, top_k: int = 10, n_threads: int = 0
    ) -> list[list[Document]]:
        """
        Best ``top_k`` documents per query, scored with BM25, in one bm25s call.

        Only documents sharing a term with the query come back (score above a no-match document's), so a query
        made only of stopwords gets an empty list. With ``filters``, exactly ``top_k`` matching documents come
        back when that many match and share a term with the query.
        Each hit is a new Document with ``score`` set and ``meta["retrieval_type"] = "sparse"``.

        :param n_threads: Threads scoring the batch (0 = this thread, -1 = all cores).
        :raises ValueError: If a query is not a non-blank valid-Unicode string of at most 1,048,576 characters,
            or top_k is not an integer in [1, 10000] (``components.checks``).
        :raises FilterError: If ``filters`` is not in Haystack's filter syntax.
        """
        found = self._hits(queries, filters, top_k, n_threads)
        with collector_paused():
            return [hit_documents(docs, scores, "sparse") for docs, scores in found]

    def bm25_shared_hits_batch(
        self, queries: list[str], filters: dict[str, Any] | None = None, top_k: int = 10, n_threads: int = 0
    ) -> list[SharedHits]:
        """
        ``bm25_retrieval_batch``'s hits as the store's own Documents and their scores, per query: nothing is
        copied, so a fusion stage builds Documents only for what it keeps. The Documents are shared with the
        store: read them, never change them (``Candidates.shared`` hands out copies).
        """
        return self._hits(queries, filters, top_k, n_threads)

    def _hits(self, queries: list[str], filters: dict[str, Any] | None, top_k: int, n_threads: int) -> list[SharedHits]:
        """Check the inputs, score every query, and look the hits up (stored Documents, scores)."""
        check_queries(queries, "queries")
        check_top_k(top_k)
        check_filters(filters)
        index = self._ready()
        terms = self._tokenizer_ready()(queries)
        with self._lock:
            snapshot = index.snapshot()
            searched, (main_accept, delta_accept) = self._filtered(snapshot, filters)
        hits = searched.search(terms, top_k, n_threads, main_accept, delta_accept)
        with self._lock:  # a document deleted since the snapshot is no longer returned
            index = self._ready()
            if index.version != snapshot.version:
                hits = [_live(index, ids, scores) for ids, scores in hits]
            found = self._documents.get(list(itertools.chain.from_iterable(ids for ids, _ in hits)))
        ends = list(itertools.accumulate(len(ids) for ids, _ in hits))
        return [(found[end - len(ids) : end], scores) for (ids, scores), end in zip(hits, ends, strict=True)]

    def _filtered(
        self, snapshot: IndexSnapshot[MainSegment], filters: dict[str, Any] | None
    ) -> tuple[IndexSnapshot[SearchableMain], Masks]:
        """What to search for FILTERS (under the lock): SNAPSHOT, or with a tenant filter and the numba backend the
        tenant's view of it (``BM25Tenants.view``), and the masks of the main and delta rows that match."""
        tenant = tenant_filter(filters)
        if tenant is None:
            return snapshot, self._documents.filter_masks(snapshot, filters) if filters else (None, None)
        if self.backend == "numba" and snapshot.main is not None:
            seen, main_accept, delta_accept = self._tenant_rows.view(snapshot, self._documents.get, tenant)
            return seen, (main_accept, delta_accept)
        return snapshot, self._tenant_rows.masks(snapshot, self._documents.get, tenant)

    def _new_tenant_cache(self) -> BM25Tenants:
        return BM25Tenants()

    bm25_retrieval_async = twin(bm25_retrieval)
    bm25_retrieval_batch_async = twin(bm25_retrieval_batch)
    bm25_shared_hits_batch_async = twin(bm25_shared_hits_batch)


def _live(index: BM25Index, ids: list[str], scores: list[float]) -> IdHits:
    """The hits whose documents ``index`` still holds."""
    kept = [(doc_id, score) for doc_id, score in zip(ids, scores, strict=True) if doc_id in index]
    return [doc_id for doc_id, _ in kept], [score for _, score in kept]
