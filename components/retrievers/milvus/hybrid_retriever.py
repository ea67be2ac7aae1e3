"""MilvusHybridRetriever: Milvus's own hybrid search (dense + BM25, fused by RRF or weights) of one query."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from components.checks import check_query
from components.retrievers.milvus.milvus_retriever_base import MilvusSearches, checked_embeddings
from components.score_threshold import above_threshold
from components.stores.milvus.document_store import RANKERS, MilvusDocumentStore


class MilvusHybridBase(MilvusSearches):
    """Hybrid settings shared by the single and batch retrievers: the fusion and its parameters."""

    _extra_init_parameters = (*MilvusSearches._extra_init_parameters, "ranker", "rrf_k", "weights")

    def __init__(
        self,
        document_store: MilvusDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: FilterPolicy = FilterPolicy.REPLACE,
        ranker: str = "rrf",
        rrf_k: int = 60,
        weights: list[float] | None = None,
        score_threshold: float | None = None,
        tenant: str | None = None,
    ) -> None:
        """
        :param document_store: a MilvusDocumentStore built with ``bm25=True``.
        :param filters: Haystack filters applied to both searches of every query.
        :param top_k: documents per query (and candidates per search), in [1, 10000].
        :param filter_policy: REPLACE or MERGE, as on the other Milvus retrievers (``MilvusRetrieverBase``): neither
            pins a tenant, ``tenant`` does.
        :param ranker: ``rrf`` (reciprocal rank fusion) or ``weighted`` (weighted sum of scores).
        :param rrf_k: RRF's smoothing constant, in [1, 16384).
        :param weights: ``[dense, bm25]`` weights in [0, 1] for ``weighted`` (default ``[0.5, 0.5]``).
        :param score_threshold: drop hits whose FUSED score is below it (applied after fusion: RRF sums are small,
            at most ``2 / (rrf_k + 1)``; ``weighted`` sums Milvus's normalised scores); None keeps every hit.
        :param tenant: search only this tenant's documents (the store's ``partition_key_field``), ANDed with every
            run's filters whatever the policy; None: no tenant is pinned.
        :raises ValueError: naming the parameter that is out of range.
        """
        super().__init__(document_store, filters, top_k, filter_policy, score_threshold, tenant)
        if ranker not in RANKERS:
            raise ValueError(f"ranker must be one of {', '.join(RANKERS)}, got {ranker!r}")
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or not 1 <= rrf_k < 16384:
            raise ValueError(f"rrf_k must be an integer in [1, 16384), got {rrf_k!r}")
        weights = [0.5, 0.5] if weights is None else weights
        if len(weights) != 2 or not all(isinstance(w, int | float) and 0 <= w <= 1 for w in weights):
            raise ValueError(f"weights must be [dense, bm25], two numbers in [0, 1], got {weights!r}")
        self.ranker, self.rrf_k, self.weights = ranker, rrf_k, weights

    def _hybrid(
        self, queries: list[str], embeddings: Any, name: str, filters: dict[str, Any] | None, top_k: int | None
    ) -> list[list[Document]]:
        filters, top_k = self._run_settings(filters, top_k)
        store = self.document_store
        store.warm_up()
        vectors = checked_embeddings(embeddings, name, store.dim)
        weights = (float(self.weights[0]), float(self.weights[1]))
        return store.hybrid_search(queries, vectors, top_k, filters, self.ranker, self.rrf_k, weights)


@component
class MilvusHybridRetriever(MilvusHybridBase):
    """
    Dense and BM25 search of one query inside Milvus, fused by Milvus (``hybrid_search``).

    Documents carry the fused score and ``meta["retrieval_type"] = "hybrid"``; ``score_threshold`` applies to the
    fused score. For mxRAG's query-length
    weighting instead, feed ``MilvusEmbeddingRetriever`` and ``MilvusBM25Retriever`` into ``MixRetrieveRanker``.

    ```python
    retriever = MilvusHybridRetriever(MilvusDocumentStore(uri="index/milvus.db"), top_k=5)
    retriever.run(query="hybrid search", query_embedding=embedding)["documents"]
    ```
    """

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve the best documents for ``query`` by fused dense and BM25 search.

        :param query: the query text for BM25 (non-blank, at most 1 MiB).
        :param query_embedding: the same query's embedding for dense search.
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :param score_threshold: overrides the init ``score_threshold``: hits whose fused score is below it are
            dropped.
        :returns: ``{"documents": [...]}``, best first, at most ``top_k``.
        """
        threshold = self._run_threshold(score_threshold)
        found = self._hybrid([check_query(query)], [query_embedding], "query_embedding", filters, top_k)[0]
        return {"documents": above_threshold(found, threshold)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run,
            query=query,
            query_embedding=query_embedding,
            filters=filters,
            top_k=top_k,
            score_threshold=score_threshold,
        )
