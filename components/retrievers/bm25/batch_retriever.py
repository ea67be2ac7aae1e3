"""Keyword retrieval with BM25 for many queries at once: one multi-threaded bm25s call per batch."""

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from components.checks import check_queries
from components.retrievers.retriever_common import StoreRetrieverBase
from components.score_threshold import above_threshold_lists
from components.stores.bm25.document_store import BM25DocumentStore

T = TypeVar("T")


@component
class BM25BatchRetriever(StoreRetrieverBase[BM25DocumentStore]):
    """
    Retrieves the best documents for each of many queries (the seed's ``bm25_search(query_list, top_k)``).

    All queries are scored in one bm25s call over ``n_threads`` threads; the output keeps one list per query,
    in query order, each as ``BM25Retriever`` would return it (new Documents with ``score`` and
    ``meta["retrieval_type"] = "sparse"``; empty for a stopword-only query; a blank query is a ValueError).

    ```python
    from components.retrievers.bm25.batch_retriever import BM25BatchRetriever

    result = BM25BatchRetriever(store, top_k=5).run(queries=["first question", "second question"])
    first_hits, second_hits = result["documents"]
    ```
    """

    _store_type = BM25DocumentStore
    _store_error = TypeError
    _extra_init_parameters = ("n_threads",)

    def __init__(
        self,
        document_store: BM25DocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: FilterPolicy = FilterPolicy.REPLACE,
        n_threads: int = -1,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param document_store: The BM25DocumentStore to search.
        :param filters: Haystack metadata filters applied to every query (see ``filter_policy``).
        :param top_k: Maximum number of documents per query, in [1, 10000].
        :param filter_policy: ``REPLACE`` (run-time filters, when given, replace ``filters``) or ``MERGE`` (Haystack's
            merge: both apply, except that a run-time condition on a field ``filters`` names replaces that condition,
            and ``filters`` are dropped when the top-level operators differ).
        :param n_threads: Threads bm25s scores with: -1 = all cores, 0 = the calling thread, or a count >= 1.
        :param score_threshold: Drop hits whose BM25 score is below it; None keeps every hit.
        :raises TypeError: If ``document_store`` is not a BM25DocumentStore.
        :raises ValueError: If ``top_k`` is not an integer in [1, 10000], ``n_threads`` < -1 or ``score_threshold``
            is not None or a finite number.
        :raises FilterError: If ``filters`` are not in Haystack's filter syntax.
        """
        self._set_common(document_store, filters, top_k, filter_policy, score_threshold)
        if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < -1:
            raise ValueError(
                f"n_threads must be an integer >= -1 (-1 = all cores, 0 = calling thread); got {n_threads!r}"
            )
        self.n_threads = n_threads

    def warm_up(self) -> None:
        """
        Load the store's index and tokenizer (and compile numba's scorers: parallel for batches, serial for a single
        query) now, not on the first batch. Idempotent and cheap once done: ``Pipeline.run`` calls it every run.
        """
        if getattr(self, "_warm_store", None) is self.document_store:
            return
        for threads in dict.fromkeys((self.n_threads, 0)):
            self.document_store.warm_up(n_threads=threads)
        self._warm_store = self.document_store

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        queries: list[str],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Retrieve the best documents for every query.

        :param queries: Query texts, each not blank, at most 1,048,576 characters, valid Unicode.
        :param filters: Metadata filters for this batch, combined with the init filters per ``filter_policy``.
        :param top_k: Maximum number of documents per query (default: the init ``top_k``), in [1, 10000].
        :param score_threshold: Minimum BM25 score for this batch (default: the init ``score_threshold``).
        :returns: ``{"documents": [[...], ...]}``: one list per query, in query order, best first.
        :raises ValueError: If a query (named ``queries[i]``), ``top_k`` or ``score_threshold`` breaks the rules of
            ``components.checks``.
        :raises FilterError: If ``filters`` are not in Haystack's filter syntax.
        """
        threshold = self._run_threshold(score_threshold)
        hits = self._scored(queries, filters, top_k, self.document_store.bm25_retrieval_batch)
        return {"documents": above_threshold_lists(hits, threshold)}

    def _scored(
        self, queries: list[str], filters: dict[str, Any] | None, top_k: int | None, search: Callable[..., list[T]]
    ) -> list[T]:
        """Check the run's inputs and score every query with ``search`` (a store method); one query is scored in
        this thread.

        Handing a single query to a thread pool costs more than scoring it (thread start-up: ~1 ms on 2 cores),
        and the hits do not depend on the number of threads.
        """
        check_queries(queries)
        filters, top_k = self._run_settings(filters, top_k)
        threads = self.n_threads if len(queries) > 1 else 0
        return search(queries, filters=filters, top_k=top_k, n_threads=threads)

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self,
        queries: list[str],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """Same as ``run``, in a worker thread so the event loop stays free while BM25 scores."""
        return await asyncio.to_thread(self.run, queries, filters, top_k, score_threshold)
