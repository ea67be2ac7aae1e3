"""MilvusBatchEmbeddingRetriever: dense retrieval of many queries in one Milvus search call (nq > 1)."""

import asyncio
from typing import Any

from haystack import Document, component

from components.retrievers.milvus.milvus_retriever_base import MilvusSearches


@component
class MilvusBatchEmbeddingRetriever(MilvusSearches):
    """
    Retrieves the nearest documents for a batch of query embeddings (UltraRAG's ``retriever_batch_search``).

    All queries go to Milvus in one search request; the result for query i is what
    ``MilvusEmbeddingRetriever`` returns for it alone. Filters and ``top_k`` apply to every query.

    ```python
    retriever = MilvusBatchEmbeddingRetriever(MilvusDocumentStore(uri="index/milvus.db"), top_k=5)
    retriever.run(query_embeddings=embeddings)["documents"]  # one list of Documents per query
    ```
    """

    @component.output_types(documents=list[list[Document]])
    def run(
        self, query_embeddings: list[list[float]], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[list[Document]]]:
        """
        Retrieve the nearest documents for each query embedding.

        :param query_embeddings: one embedding per query, all as long as the collection's vectors.
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :returns: ``{"documents": [[...], ...]}``, one best-first list per query, in query order.
        """
        return {"documents": self._dense(query_embeddings, "query_embeddings", filters, top_k)}

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self, query_embeddings: list[list[float]], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[list[Document]]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(self.run, query_embeddings=query_embeddings, filters=filters, top_k=top_k)
