"""FAISSBatchCandidateRetriever: the dense half of a hybrid search, handed to the fusion stage as Candidates."""

import asyncio
from typing import Any

import numpy as np
from haystack import component

from components.retrievers.candidates import Candidates
from components.retrievers.faiss.embedding_retriever import FAISSRetrieverBase

NAME = "query_embeddings"


@component
class FAISSBatchCandidateRetriever(FAISSRetrieverBase):
    """
    Searches a batch of query embeddings in one FAISS call, like ``FAISSBatchEmbeddingRetriever``, and emits the
    hits as one :class:`~components.retrievers.candidates.Candidates` (``side="dense"``) instead of Document lists.

    A fusion stage (``components.joiners``) then receives them without Haystack's per-Document deep copy and
    returns only its top documents. Hits, scores and ``meta["retrieval_type"] = "dense"`` are exactly those of
    ``FAISSBatchEmbeddingRetriever``. A ``score_threshold`` here drops weak dense hits BEFORE fusion; to drop weak
    fused hits, set it on the joiner.

    ```python
    retriever = FAISSBatchCandidateRetriever(FAISSDocumentStore(path="index_dir"), top_k=100)
    candidates = retriever.run(query_embeddings=embeddings)["candidates"]
    ```
    """

    @component.output_types(candidates=Candidates)
    def run(
        self,
        query_embeddings: list[list[float]] | np.ndarray,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, Candidates]:
        """
        Retrieve the nearest documents for each query embedding, all in one store call.

        :param query_embeddings: one embedding per query, all as long as the store's vectors (lists or a 2-d array).
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k``, in [1, 10000].
        :param score_threshold: overrides the init ``score_threshold`` (the minimum score kept).
        :returns: ``{"candidates": Candidates}``, one best-first list per query, in query order.
        """
        threshold = self._run_threshold(score_threshold)
        if self.return_embedding:  # the stored documents lack their embeddings: copy each hit with its own
            candidates = Candidates(self._search_embeddings(query_embeddings, NAME, filters, top_k), "dense")
        else:
            shared = self._searched(query_embeddings, NAME, filters, top_k, self.document_store.search_shared_hits)
            candidates = Candidates.shared(shared, "dense")
        return {"candidates": candidates.at_least(threshold)}

    @component.output_types(candidates=Candidates)
    async def run_async(
        self,
        query_embeddings: list[list[float]] | np.ndarray,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, Candidates]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(
            self.run, query_embeddings=query_embeddings, filters=filters, top_k=top_k, score_threshold=score_threshold
        )
