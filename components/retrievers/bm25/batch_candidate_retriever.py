"""BM25BatchCandidateRetriever: the BM25 half of a hybrid search, handed to the fusion stage as Candidates."""

import asyncio
from typing import Any

from haystack import component

from components.retrievers.bm25.batch_retriever import BM25BatchRetriever
from components.retrievers.candidates import Candidates


@component
class BM25BatchCandidateRetriever(BM25BatchRetriever):
    """
    Scores many queries in one bm25s call, like ``BM25BatchRetriever`` (same parameters), and emits the hits as one
    :class:`~components.retrievers.candidates.Candidates` (``side="sparse"``) instead of Document lists.

    A fusion stage (``components.joiners``) then receives them without Haystack's per-Document deep copy and
    returns only its top documents. Hits, scores and ``meta["retrieval_type"] = "sparse"`` are exactly those of
    ``BM25BatchRetriever``. A ``score_threshold`` here drops weak BM25 hits BEFORE fusion (so they neither score
    nor stretch the fusion's normalisation); to drop weak fused hits, set it on the joiner.

    ```python
    candidates = BM25BatchCandidateRetriever(store, top_k=100).run(queries=["first", "second"])["candidates"]
    ```
    """

    @component.output_types(candidates=Candidates)
    def run(  # type: ignore[override]  # same inputs, the hits as Candidates
        self,
        queries: list[str],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, Candidates]:
        """
        Retrieve the best documents for every query.

        :param queries: Query texts, each not blank, at most 1,048,576 characters, valid Unicode.
        :param filters: Metadata filters for this batch, combined with the init filters per ``filter_policy``.
        :param top_k: Maximum number of documents per query (default: the init ``top_k``), in [1, 10000].
        :param score_threshold: Minimum BM25 score for this batch (default: the init ``score_threshold``).
        :returns: ``{"candidates": Candidates}``: one best-first list per query, in query order.
        :raises ValueError: If a query (named ``queries[i]``), ``top_k`` or ``score_threshold`` breaks the rules of
            ``components.checks``.
        """
        threshold = self._run_threshold(score_threshold)
        hits = self._scored(queries, filters, top_k, self.document_store.bm25_shared_hits_batch)
        return {"candidates": Candidates.shared(hits, "sparse").at_least(threshold)}

    @component.output_types(candidates=Candidates)
    async def run_async(  # type: ignore[override]
        self,
        queries: list[str],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, Candidates]:
        """Same as ``run``, in a worker thread so the event loop stays free while BM25 scores."""
        return await asyncio.to_thread(self.run, queries, filters, top_k, score_threshold)
