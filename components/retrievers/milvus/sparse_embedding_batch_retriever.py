"""MilvusSparseEmbeddingBatchRetriever: learned sparse retrieval of many queries in one Milvus search call."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from components.retrievers.milvus.milvus_retriever_base import MilvusSearches, checked_sparse
from components.score_threshold import above_threshold_lists


@component
class MilvusSparseEmbeddingBatchRetriever(MilvusSearches):
    """
    Learned sparse search of a batch of query ``SparseEmbedding``s in one Milvus request (nq > 1).

    The result for query i is what ``MilvusSparseEmbeddingRetriever`` returns for it alone.

    ```python
    retriever = MilvusSparseEmbeddingBatchRetriever(MilvusDocumentStore(uri="index/milvus.db",
                                                    learned_sparse_field_name="splade"), top_k=5)
    retriever.run(query_sparse_embeddings=sparse_embeddings)["documents"]  # one list of Documents per query
    ```
    """

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        query_sparse_embeddings: list[SparseEmbedding],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Retrieve the best dot-product matches of each query's sparse embedding.

        :param query_sparse_embeddings: one SparseEmbedding per query; an empty list has no answers.
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :param score_threshold: overrides the init ``score_threshold``: hits scoring below it are dropped.
        :returns: ``{"documents": [[...], ...]}``, one best-first list per query, in query order.
        """
        threshold = self._run_threshold(score_threshold)
        queries = checked_sparse(query_sparse_embeddings, "query_sparse_embeddings")
        return {"documents": above_threshold_lists(self._sparse(queries, filters, top_k), threshold)}

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self,
        query_sparse_embeddings: list[SparseEmbedding],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run,
            query_sparse_embeddings=query_sparse_embeddings,
            filters=filters,
            top_k=top_k,
            score_threshold=score_threshold,
        )
