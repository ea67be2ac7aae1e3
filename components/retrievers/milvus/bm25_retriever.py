"""MilvusBM25Retriever: BM25 retrieval of one query text inside Milvus (its BM25 function and sparse index)."""

import asyncio
from typing import Any

from haystack import Document, component

from components.checks import check_query
from components.retrievers.milvus.milvus_retriever_base import MilvusSearches
from components.score_threshold import above_threshold


@component
class MilvusBM25Retriever(MilvusSearches):
    """
    Full-text BM25 search of a query in a Milvus collection built with ``bm25=True``.

    Milvus analyses the text (see ``MilvusDocumentStore.bm25_analyzer_in_use``), scores with BM25 and applies
    the filters; scores are positive, higher is better, on Milvus Lite (which returns them negated) and on
    servers alike (so a ``score_threshold`` means the same on both), and documents carry
    ``meta["retrieval_type"] = "sparse"`` for ``MixRetrieveRanker``.

    ```python
    retriever = MilvusBM25Retriever(MilvusDocumentStore(uri="index/milvus.db"), top_k=5)
    retriever.run(query="full-text search in Milvus")["documents"]
    ```
    """

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents that best match ``query`` by BM25.

        :param query: the query text (non-blank, at most 1 MiB).
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :param score_threshold: overrides the init ``score_threshold``: hits scoring below it are dropped.
        :returns: ``{"documents": [...]}``, best first, at most ``top_k``.
        """
        threshold = self._run_threshold(score_threshold)
        return {"documents": above_threshold(self._bm25([check_query(query)], filters, top_k)[0], threshold)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run, query=query, filters=filters, top_k=top_k, score_threshold=score_threshold
        )
