"""Keyword retrieval with BM25 from a BM25DocumentStore (bm25s), one query at a time."""

import asyncio
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy

from components.stores.bm25_document_store import BM25DocumentStore
from components.stores.bm25_settings import check_top_k


@component
class BM25Retriever:
    """
    Retrieves the documents that best match a query with BM25 (the seed's ``bm25_search`` for one query).

    Hits are new Documents with their BM25 ``score`` and ``meta["retrieval_type"] = "sparse"``, best first;
    only documents that share a term with the query are returned, so an empty or stopword-only query returns
    none. Metadata filters are exact: with enough matching documents, exactly ``top_k`` come back.

    ```python
    from haystack import Document
    from components.stores.bm25_document_store import BM25DocumentStore
    from components.retrievers.bm25_retriever import BM25Retriever

    store = BM25DocumentStore()
    store.write_documents([Document(content="BM25 ranks documents by term frequency and rarity")])
    print(BM25Retriever(store).run(query="how does BM25 rank documents?")["documents"])
    ```
    """

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
        :param top_k: Maximum number of documents per query, >= 1.
        :param filter_policy: ``REPLACE`` (runtime filters replace ``filters``) or ``MERGE`` (both apply).
        :raises TypeError: If ``document_store`` is not a BM25DocumentStore.
        :raises ValueError: If ``top_k`` < 1.
        """
        if not isinstance(document_store, BM25DocumentStore):
            raise TypeError(f"document_store must be a BM25DocumentStore, got {type(document_store).__name__}")
        check_top_k(top_k)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = FilterPolicy.from_str(filter_policy) if isinstance(filter_policy, str) else filter_policy

    def to_dict(self) -> dict[str, Any]:
        """Serialize the retriever and its store's configuration."""
        return default_to_dict(
            self, document_store=self.document_store, filters=self.filters, top_k=self.top_k,
            filter_policy=self.filter_policy.value,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BM25Retriever":
        """Deserialize a retriever (and its store) from ``to_dict`` output."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the store's index and tokenizer now rather than on the first query."""
        self.document_store.warm_up()

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Retrieve the best documents for ``query``.

        :param query: The query text, at most 1,048,576 characters.
        :param filters: Metadata filters for this query, combined with the init filters per ``filter_policy``.
        :param top_k: Maximum number of documents (default: the init ``top_k``), >= 1.
        :returns: ``{"documents": [...]}``, best first.
        :raises ValueError: If the query is too long or not a string, or ``top_k`` < 1.
        """
        top_k = self.top_k if top_k is None else top_k
        check_top_k(top_k)
        filters = apply_filter_policy(self.filter_policy, self.filters, filters)
        return {"documents": self.document_store.bm25_retrieval(query, filters=filters, top_k=top_k)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so the event loop stays free while BM25 scores."""
        return await asyncio.to_thread(self.run, query, filters, top_k)
