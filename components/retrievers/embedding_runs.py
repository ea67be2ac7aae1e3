"""The ``run``/``run_async`` sockets every dense retriever shares, whatever store answers.

FAISS and Milvus retrievers take the same inputs and give the same outputs; they differ only in how their store
searches a batch of query embeddings, which each retriever class supplies as ``_search_embeddings``. The
single-query retriever sends a batch of one. Both drop the hits under the run's ``score_threshold`` here
(``components.score_threshold``), after the store's search.

The embeddings may come as Python lists (Haystack's embedder protocol) or as one numpy array (our embedders with
``as_array``): a pipeline deep-copies a list number by number before the retriever runs, an array in one call.
"""

import asyncio
from typing import Any

import numpy as np
from haystack import Document, component

from components.score_threshold import above_threshold, above_threshold_lists


class EmbeddingSearch:
    """The store-specific part: search a batch of query embeddings with this run's filters and ``top_k``."""

    def _search_embeddings(
        self, embeddings: Any, name: str, filters: dict[str, Any] | None, top_k: int | None
    ) -> list[list[Document]]:
        """One best-first list per embedding; ``name`` is the run parameter that errors name."""
        raise NotImplementedError

    def _run_threshold(self, score_threshold: float | None) -> float | None:
        """The run's minimum score (``StoreRetrieverBase._run_threshold``)."""
        raise NotImplementedError


class SingleEmbeddingRuns(EmbeddingSearch):
    """``query_embedding`` → ``documents``."""

    @component.output_types(documents=list[Document])
    def run(
        self,
        query_embedding: list[float] | np.ndarray,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents nearest to ``query_embedding``.

        :param query_embedding: the query's embedding, as long as the store's vectors (a list or a 1-d array).
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :param score_threshold: overrides the init ``score_threshold``: hits scoring below it are dropped.
        :returns: ``{"documents": [...]}``, best first, at most ``top_k``.
        """
        threshold = self._run_threshold(score_threshold)
        one = query_embedding[np.newaxis] if isinstance(query_embedding, np.ndarray) else [query_embedding]
        found = self._search_embeddings(one, "query_embedding", filters, top_k)[0]
        return {"documents": above_threshold(found, threshold)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query_embedding: list[float] | np.ndarray,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run, query_embedding=query_embedding, filters=filters, top_k=top_k, score_threshold=score_threshold
        )


class BatchEmbeddingRuns(EmbeddingSearch):
    """``query_embeddings`` → one ``documents`` list per query."""

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        query_embeddings: list[list[float]] | np.ndarray,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Retrieve the nearest documents for each query embedding, all in one store call.

        :param query_embeddings: one embedding per query, all as long as the store's vectors (lists or a 2-d array).
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :param score_threshold: overrides the init ``score_threshold``: hits scoring below it are dropped.
        :returns: ``{"documents": [[...], ...]}``, one best-first list per query, in query order.
        """
        threshold = self._run_threshold(score_threshold)
        found = self._search_embeddings(query_embeddings, "query_embeddings", filters, top_k)
        return {"documents": above_threshold_lists(found, threshold)}

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self,
        query_embeddings: list[list[float]] | np.ndarray,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run, query_embeddings=query_embeddings, filters=filters, top_k=top_k, score_threshold=score_threshold
        )
