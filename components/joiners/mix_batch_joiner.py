"""MixBatchJoiner: MixRetrieveBatchRanker's fusion of dense and BM25 hits, read from Candidates.

The hybrid batch pipeline's last stage. It fuses each query exactly as ``MixRetrieveRanker`` does (same parameters,
weights, min-max normalisation, merge by id, ties and output documents), but takes the retrievers' hits as
:class:`~components.retrievers.candidates.Candidates`, which Haystack passes on without copying each Document, and
builds Documents only for the ``top_k`` it returns.
"""

import math

import numpy as np
from haystack import Document, component

from components.checks import check_queries
from components.joiners.candidate_sides import checked_scores, sides
from components.rankers.mix_retrieve_ranker import MixRetrieveRankerBase, min_max
from components.rankers.reranker_base import top_k_order
from components.retrievers.candidates import Candidates, Side
from components.stores.hits import collector_paused


@component
class MixBatchJoiner(MixRetrieveRankerBase):
    """
    Query-length-adaptive fusion of dense and BM25 candidates, one fused list per query.

    Parameters are ``MixRetrieveRanker``'s (``top_k``, ``baseline``, ``amplitude``, ``slope``, ``midpoint``);
    ``queries[i]`` is fused from query i's dense and sparse candidates. Output documents are new, best first, with
    the fused ``score``, ``meta["retrieval_sources"]`` and ``meta["dense_score"]``/``meta["sparse_score"]`` in place
    of ``meta["retrieval_type"]``.

    ```python
    joiner = MixBatchJoiner(top_k=10)
    joiner.run(queries=queries, dense_candidates=dense, sparse_candidates=sparse)["documents"]
    ```
    """

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        queries: list[str],
        dense_candidates: Candidates | None = None,
        sparse_candidates: Candidates | None = None,
        top_k: int | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Fuse each query's dense and sparse candidates and keep its best ``top_k``.

        :param queries: the queries; each one's length in characters sets its dense weight.
        :param dense_candidates: a dense retriever's candidates, one list per query.
        :param sparse_candidates: a BM25 retriever's candidates, one list per query.
        :param top_k: how many to return per query (1..10000); defaults to the init value.
        :returns: ``{"documents": [[...], ...]}``, one list per query, best first.
        :raises ValueError: for a bad query (named ``queries[i]``) or ``top_k``, a side whose number of lists differs
            from the number of queries or that came through the other side's socket, or a score that is not finite.
        """
        check_queries(queries)
        top_k = self._resolve_top_k(top_k)
        connected = sides(len(queries), dense_candidates, sparse_candidates)
        with collector_paused():
            return {"documents": [self._fuse_query(q, query, connected, top_k) for q, query in enumerate(queries)]}

    def _fuse_query(self, q: int, query: str, connected: list[tuple[Side, Candidates]], top_k: int) -> list[Document]:
        """``MixRetrieveRanker``'s fusion of query ``q``: normalise per side, merge by id, weigh, keep ``top_k``.

        The fused score of every passage is summed per side over one array (a side that did not find a passage adds
        ``weight * 0.0``, which leaves the sum exactly what the ranker's per-passage sum is).
        """
        dense_weight = self.dense_weight(query)
        weights = {"dense": dense_weight, "sparse": 1.0 - dense_weight}
        raw: dict[Side, dict[str, float]] = {}
        first: dict[str, tuple[Candidates, int]] = {}  # where each passage was first found (dense before sparse)
        for side, candidates in connected:
            ids = candidates.ids(q)
            side_raw = best_scores(ids, checked_scores(candidates, q, f"{side}_candidates"))
            for position, doc_id in enumerate(ids):
                if doc_id not in first:
                    first[doc_id] = (candidates, position)
            if side_raw:
                raw[side] = side_raw
        if not first:
            return []
        fused = np.zeros(len(first))
        for side, side_raw in raw.items():
            normalised = dict(zip(side_raw, min_max(list(side_raw.values())), strict=True))
            fused += weights[side] * np.array([normalised.get(doc_id, 0.0) for doc_id in first])
        order = list(first)
        return [
            self._output(q, first[order[i]], [side for side in raw if order[i] in raw[side]], raw, float(fused[i]))
            for i in top_k_order(fused, top_k)
        ]

    @staticmethod
    def _output(
        q: int, where: tuple[Candidates, int], sources: list[Side], raw: dict[Side, dict[str, float]], score: float
    ) -> Document:
        """The output document of one passage: fused score, where it was found and its raw score on each side."""
        candidates, position = where
        meta = candidates.meta(q, position)
        meta.pop("retrieval_type", None)
        meta["retrieval_sources"] = sources
        doc_id = candidates.ids(q)[position]
        for side in sources:
            meta[f"{side}_score"] = raw[side][doc_id]
        return candidates.document(q, position, score=score, meta=meta)


def best_scores(ids: tuple[str, ...], scores: list[float]) -> dict[str, float]:
    """Each passage's score by id, in first-seen order; a passage listed twice keeps its best score."""
    best = dict(zip(ids, scores, strict=True))
    if len(best) < len(ids):
        best = {}
        for doc_id, score in zip(ids, scores, strict=True):
            best[doc_id] = max(best.get(doc_id, -math.inf), score)
    return best
