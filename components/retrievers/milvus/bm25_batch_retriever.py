"""MilvusBM25BatchRetriever: BM25 retrieval of many query texts in one Milvus search call."""

import asyncio
from typing import Any

from haystack import Document, component

from components.checks import check_queries
from components.retrievers.milvus.milvus_retriever_base import MilvusSearches
from components.score_threshold import above_threshold_lists


@component
class MilvusBM25BatchRetriever(MilvusSearches):
    """
    BM25 search of a batch of queries in a Milvus collection, one request for all (nq > 1).

    The result for query i is what ``MilvusBM25Retriever`` returns for it alone.

    ```python
    retriever = MilvusBM25BatchRetriever(MilvusDocumentStore(uri="index/milvus.db"), top_k=5)
    retriever.run(queries=["first question", "second question"])["documents"]
    ```
    """

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        queries: list[str],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Retrieve the best BM25 matches of each query.

        :param queries: the query texts (each non-blank, at most 1 MiB); an empty list has no answers.
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :param score_threshold: overrides the init ``score_threshold``: hits scoring below it are dropped.
        :returns: ``{"documents": [[...], ...]}``, one best-first list per query, in query order.
        """
        threshold = self._run_threshold(score_threshold)
        return {"documents": above_threshold_lists(self._bm25(check_queries(queries), filters, top_k), threshold)}

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self,
        queries: list[str],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run, queries=queries, filters=filters, top_k=top_k, score_threshold=score_threshold
        )
