"""SparseEmbeddingBatchCandidateRetriever: the learned sparse half of a fused search, handed on as Candidates."""

import asyncio
from typing import Any

from haystack import component
from haystack.dataclasses import SparseEmbedding

from components.retrievers.candidates import Candidates
from components.retrievers.sparse.batch_retriever import SparseEmbeddingBatchRetriever


@component
class SparseEmbeddingBatchCandidateRetriever(SparseEmbeddingBatchRetriever):
    """
    Scores many query vectors like ``SparseEmbeddingBatchRetriever`` (same parameters) and emits the hits as one
    :class:`~components.retrievers.candidates.Candidates` (``side="sparse"``), for the batch fusion joiners
    (``components.joiners``), which take the learned sparse side where they take BM25's.

    ```python
    candidates = SparseEmbeddingBatchCandidateRetriever(store).run(query_sparse_embeddings=vectors)["candidates"]
    ```
    """

    @component.output_types(candidates=Candidates)
    def run(  # type: ignore[override]  # same inputs, the hits as Candidates
        self,
        query_sparse_embeddings: list[SparseEmbedding],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, Candidates]:
        """Retrieve the best documents for every query vector; ``{"candidates": Candidates}``, one list per query.

        A ``score_threshold`` here drops weak hits before fusion; to drop weak fused hits, set it on the joiner.
        """
        run = SparseEmbeddingBatchRetriever.run  # @component rebuilds the class: no zero-argument super()
        found = run(self, query_sparse_embeddings, filters, top_k, score_threshold)["documents"]
        return {"candidates": Candidates(found, "sparse")}

    @component.output_types(candidates=Candidates)
    async def run_async(  # type: ignore[override]
        self,
        query_sparse_embeddings: list[SparseEmbedding],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, Candidates]:
        """Same as ``run``, in a worker thread so the event loop stays free while it scores."""
        return await asyncio.to_thread(self.run, query_sparse_embeddings, filters, top_k, score_threshold)
