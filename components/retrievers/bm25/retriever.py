"""Keyword retrieval with BM25 from a BM25DocumentStore (bm25s), one query at a time."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from components.checks import check_query
from components.retrievers.retriever_common import StoreRetrieverBase
from components.score_threshold import above_threshold
from components.stores.bm25.document_store import BM25DocumentStore


@component
class BM25Retriever(StoreRetrieverBase[BM25DocumentStore]):
    """
    Retrieves the documents that best match a query with BM25 (the seed's ``bm25_search`` for one query).

    Hits are new Documents with their BM25 ``score`` and ``meta["retrieval_type"] = "sparse"``, best first;
    only documents that share a term with the query are returned, so a stopword-only query returns none. A blank
    query is a ValueError, as in every other mode (``components.checks``). Metadata filters are exact: with
    enough matching documents, exactly ``top_k`` come back, unless ``score_threshold`` drops the weaker ones
    (BM25 scores are unbounded and grow with the query's length: see ``components.score_threshold``).

    ```python
    from haystack import Document
    from components.stores.bm25.document_store import BM25DocumentStore
    from components.retrievers.bm25.retriever import BM25Retriever

    store = BM25DocumentStore()
    store.write_documents([Document(content="BM25 ranks documents by term frequency and rarity")])
    print(BM25Retriever(store).run(query="how does BM25 rank documents?")["documents"])
    ```
    """

    _store_type = BM25DocumentStore
    _store_error = TypeError

    def __init__(
        self,
        document_store: BM25DocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: FilterPolicy = FilterPolicy.REPLACE,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param document_store: The BM25DocumentStore to search.
        :param filters: Haystack metadata filters applied to every query (see ``filter_policy``).
        :param top_k: Maximum number of documents per query, in [1, 10000].
        :param filter_policy: ``REPLACE`` (run-time filters, when given, replace ``filters``) or ``MERGE`` (Haystack's
            merge: both apply, except that a run-time condition on a field ``filters`` names replaces that condition,
            and ``filters`` are dropped when the top-level operators differ).
        :param score_threshold: Drop hits whose BM25 score is below it; None keeps every hit.
        :raises TypeError: If ``document_store`` is not a BM25DocumentStore.
        :raises ValueError: If ``top_k`` is not an integer in [1, 10000] or ``score_threshold`` is not None or a
            finite number.
        :raises FilterError: If ``filters`` are not in Haystack's filter syntax.
        """
        self._set_common(document_store, filters, top_k, filter_policy, score_threshold)

    def warm_up(self) -> None:
        """
        Load the store's index and tokenizer now rather than on the first query. Idempotent and cheap once done:
        ``Pipeline.run`` calls it every run (the store's own warm-up runs probe searches with numba).
        """
        if getattr(self, "_warm_store", None) is self.document_store:
            return
        self.document_store.warm_up()
        self._warm_store = self.document_store

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve the best documents for ``query``.

        :param query: The query text: not blank, at most 1,048,576 characters, valid Unicode.
        :param filters: Metadata filters for this query, combined with the init filters per ``filter_policy``.
        :param top_k: Maximum number of documents (default: the init ``top_k``), in [1, 10000].
        :param score_threshold: Minimum BM25 score for this query (default: the init ``score_threshold``).
        :returns: ``{"documents": [...]}``, best first.
        :raises ValueError: If the query, ``top_k`` or ``score_threshold`` breaks the rules of ``components.checks``.
        :raises FilterError: If ``filters`` are not in Haystack's filter syntax.
        """
        check_query(query)
        filters, top_k = self._run_settings(filters, top_k)
        threshold = self._run_threshold(score_threshold)
        hits = self.document_store.bm25_retrieval(query, filters=filters, top_k=top_k)
        return {"documents": above_threshold(hits, threshold)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so the event loop stays free while BM25 scores."""
        return await asyncio.to_thread(self.run, query, filters, top_k, score_threshold)
