"""MilvusEmbeddingRetriever: dense retrieval of one query from a MilvusDocumentStore."""

import asyncio
from typing import Any

from haystack import Document, component

from components.retrievers.milvus.milvus_retriever_base import MilvusSearches


@component
class MilvusEmbeddingRetriever(MilvusSearches):
    """
    Retrieves the documents nearest to a query embedding from a Milvus collection (Lite or server).

    Scores are higher-is-better (inner product by default, as in the seed; cosine; or the negated L2
    distance) and every document carries ``meta["retrieval_type"] = "dense"``, so ``MixRetrieveRanker`` takes
    these results as it takes FAISS's. Filters run inside Milvus.

    ```python
    store = MilvusDocumentStore(uri="index/milvus.db")
    retriever = MilvusEmbeddingRetriever(store, top_k=5)
    retriever.run(query_embedding=text_embedder.run("what is Milvus?")["embedding"])["documents"]
    ```
    """

    @component.output_types(documents=list[Document])
    def run(
        self, query_embedding: list[float], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents nearest to ``query_embedding``.

        :param query_embedding: the query's embedding, as long as the collection's vectors.
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :returns: ``{"documents": [...]}``, best first, at most ``top_k``.
        """
        return {"documents": self._dense([query_embedding], "query_embedding", filters, top_k)[0]}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query_embedding: list[float], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(self.run, query_embedding=query_embedding, filters=filters, top_k=top_k)
