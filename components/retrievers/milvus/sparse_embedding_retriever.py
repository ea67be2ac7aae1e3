"""MilvusSparseEmbeddingRetriever: learned sparse retrieval (SPLADE-style term weights) of one query in Milvus."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from components.retrievers.milvus.milvus_retriever_base import MilvusSearches, checked_sparse
from components.score_threshold import above_threshold


@component
class MilvusSparseEmbeddingRetriever(MilvusSearches):
    """
    Searches the learned sparse field of a Milvus collection (``learned_sparse_field_name``) with a query's
    ``SparseEmbedding``, such as a SPLADE encoder gives.

    Each document scores the dot product of its weights and the query's (Milvus's IP on a sparse inverted index);
    only documents sharing a term with the query come back, with ``meta["retrieval_type"] = "sparse"``. Filters
    run inside Milvus; ``tenant`` keeps every run inside one tenant (on a Milvus server the search then reads only
    that tenant's partition; Milvus Lite keeps tenants apart but scans every partition).

    ```python
    store = MilvusDocumentStore(uri="index/milvus.db", learned_sparse_field_name="splade")
    retriever = MilvusSparseEmbeddingRetriever(store, top_k=5)
    retriever.run(query_sparse_embedding=sparse_text_embedder.run("what is Milvus?")["sparse_embedding"])
    ```
    """

    @component.output_types(documents=list[Document])
    def run(
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents whose sparse embeddings have the largest dot product with the query's.

        :param query_sparse_embedding: the query's term weights (ids in [0, 2^32 - 2], finite weights >= 0).
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :param score_threshold: overrides the init ``score_threshold``: hits scoring below it are dropped.
        :returns: ``{"documents": [...]}``, best first, at most ``top_k``.
        """
        threshold = self._run_threshold(score_threshold)
        queries = checked_sparse(query_sparse_embedding, "query_sparse_embedding")
        return {"documents": above_threshold(self._sparse(queries, filters, top_k)[0], threshold)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run,
            query_sparse_embedding=query_sparse_embedding,
            filters=filters,
            top_k=top_k,
            score_threshold=score_threshold,
        )
