"""FAISSBatchEmbeddingRetriever: dense retrieval of many queries with one vectorised FAISS call."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy, apply_filter_policy

from components.retrievers.faiss_embedding_retriever import (
    check_store,
    check_top_k,
    deserialize,
    query_matrix,
    serialize,
)
from components.stores.faiss_document_store import FAISSDocumentStore


@component
class FAISSBatchEmbeddingRetriever:
    """
    Retrieves the nearest documents for a batch of query embeddings (UltraRAG's ``retriever_batch_search``).

    All queries go to FAISS in one call, which lets FAISS use matrix-matrix products and its threads; the
    result for query i is exactly what ``FAISSEmbeddingRetriever`` returns for it alone. Filters and
    ``top_k`` apply to every query of the batch.

    ```python
    retriever = FAISSBatchEmbeddingRetriever(FAISSDocumentStore(path="index_dir"), top_k=5)
    retriever.run(query_embeddings=embeddings)["documents"]  # one list of Documents per query
    ```
    """

    def __init__(
        self,
        document_store: FAISSDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
    ) -> None:
        """
        :param document_store: the FAISSDocumentStore to search.
        :param filters: Haystack filters applied to every query.
        :param top_k: documents per query, at least 1.
        :param filter_policy: REPLACE (run-time filters replace init filters) or MERGE (both apply).
        :param return_embedding: return the documents' stored embeddings too.
        """
        check_store(document_store)
        check_top_k(top_k)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = FilterPolicy.from_str(filter_policy) if isinstance(filter_policy, str) else filter_policy
        self.return_embedding = return_embedding

    def to_dict(self) -> dict[str, Any]:
        """Serialise the retriever and its store's settings."""
        return serialize(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FAISSBatchEmbeddingRetriever":
        """Rebuild the retriever (and its store) from ``to_dict`` output."""
        return deserialize(cls, data)

    @component.output_types(documents=list[list[Document]])
    def run(
        self, query_embeddings: list[list[float]], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[list[Document]]]:
        """
        Retrieve the nearest documents for each query embedding.

        :param query_embeddings: one embedding per query, all as long as the store's vectors.
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k`` (at least 1).
        :returns: ``{"documents": [[...], ...]}``, one best-first list per query, in query order.
        """
        top_k = self.top_k if top_k is None else top_k
        check_top_k(top_k)
        if not query_embeddings:
            return {"documents": []}
        queries = query_matrix(query_embeddings, "query_embeddings")
        filters = apply_filter_policy(self.filter_policy, self.filters, filters)
        found = self.document_store.search(queries, top_k, filters=filters, return_embedding=self.return_embedding)
        return {"documents": found}

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self, query_embeddings: list[list[float]], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[list[Document]]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(self.run, query_embeddings=query_embeddings, filters=filters, top_k=top_k)
