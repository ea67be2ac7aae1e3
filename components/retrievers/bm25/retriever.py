"""Keyword retrieval with BM25 from a BM25DocumentStore (bm25s), one query at a time."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from components.checks import check_query
from components.retrievers.retriever_common import StoreRetrieverBase
from components.stores.bm25.document_store import BM25DocumentStore


@component
class BM25Retriever(StoreRetrieverBase[BM25DocumentStore]):
    """
    Retrieves the documents that best match a query with BM25 (the seed's ``bm25_search`` for one query).

    Hits are new Documents with their BM25 ``score`` and ``meta["retrieval_type"] = "sparse"``, best first;
    only documents that share a term with the query are returned, so a stopword-only query returns none. A blank
    query is a ValueError, as in every other mode (``components.checks``). Metadata filters are exact: with
    enough matching documents, exactly ``top_k`` come back.

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
    ) -> None:
        """
        :param document_store: The BM25DocumentStore to search.
        :param filters: Haystack metadata filters applied to every query (see ``filter_policy``).
        :param top_k: Maximum number of documents per query, in [1, 10000].
        :param filter_policy: ``REPLACE`` (runtime filters replace ``filters``) or ``MERGE`` (both apply).
        :raises TypeError: If ``document_store`` is not a BM25DocumentStore.
        :raises ValueError: If ``top_k`` is not an integer in [1, 10000].
        :raises FilterError: If ``filters`` are not in Haystack's filter syntax.
        """
        self._set_common(document_store, filters, top_k, filter_policy)

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
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Retrieve the best documents for ``query``.

        :param query: The query text: not blank, at most 1,048,576 characters, valid Unicode.
        :param filters: Metadata filters for this query, combined with the init filters per ``filter_policy``.
        :param top_k: Maximum number of documents (default: the init ``top_k``), in [1, 10000].
        :returns: ``{"documents": [...]}``, best first.
        :raises ValueError: If the query or ``top_k`` breaks the rules of ``components.checks``.
        :raises FilterError: If ``filters`` are not in Haystack's filter syntax.
        """
        check_query(query)
        filters, top_k = self._run_settings(filters, top_k)
        return {"documents": self.document_store.bm25_retrieval(query, filters=filters, top_k=top_k)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so the event loop stays free while BM25 scores."""
        return await asyncio.to_thread(self.run, query, filters, top_k)
