"""MilvusHybridBatchRetriever: Milvus hybrid search (dense + BM25, fused) of many queries in one request."""

import asyncio
from typing import Any

from haystack import Document, component

from components.checks import check_queries
from components.retrievers.milvus.hybrid_retriever import MilvusHybridBase
from components.score_threshold import above_threshold_lists


@component
class MilvusHybridBatchRetriever(MilvusHybridBase):
    """
    Milvus hybrid search of a batch of queries in one request; result i is what the single retriever gives.

    ```python
    retriever = MilvusHybridBatchRetriever(MilvusDocumentStore(uri="index/milvus.db"), top_k=5)
    retriever.run(queries=texts, query_embeddings=embeddings)["documents"]  # one list per query
    ```
    """

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        queries: list[str],
        query_embeddings: list[list[float]],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Retrieve the fused dense and BM25 results of each query.

        :param queries: the query texts, one per embedding, in the same order.
        :param query_embeddings: the queries' embeddings.
        :param score_threshold: overrides the init ``score_threshold``: hits whose fused score is below it are
            dropped.
        :returns: ``{"documents": [[...], ...]}``, one best-first list per query, in query order.
        """
        threshold = self._run_threshold(score_threshold)
        found = self._hybrid(check_queries(queries), query_embeddings, "query_embeddings", filters, top_k)
        return {"documents": above_threshold_lists(found, threshold)}

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self,
        queries: list[str],
        query_embeddings: list[list[float]],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run,
            queries=queries,
            query_embeddings=query_embeddings,
            filters=filters,
            top_k=top_k,
            score_threshold=score_threshold,
        )
