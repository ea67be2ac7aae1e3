"""MixBatchJoiner: MixRetrieveBatchRanker's fusion of dense and BM25 hits, read from Candidates.

The hybrid batch pipeline's last stage. It fuses each query exactly as ``MixRetrieveRanker`` does (same parameters,
weights, min-max normalisation, merge by id, ties and output documents; the curve and the fusion are
``components.rankers.mix_fusion``'s), but takes the retrievers' hits as
:class:`~components.retrievers.candidates.Candidates`, which Haystack passes on without copying each Document, and
builds Documents only for the ``top_k`` it returns.
"""

from typing import Any

import numpy as np
from haystack import Document, component

from components.checks import check_queries
from components.joiners.candidate_sides import checked_scores, sides
from components.rankers.mix_fusion import best_scores, fused_scores
from components.rankers.mix_retrieve_ranker import MixRetrieveRankerBase
from components.rankers.reranker_base import above, top_k_order
from components.retrievers.candidates import Candidates, Side
from components.stores.hits import blank_document, collector_paused

_MISSING: Any = object()  # not found by a side (a raw score is any float)


@component
class MixBatchJoiner(MixRetrieveRankerBase):
    """
    Query-length-adaptive fusion of dense and BM25 candidates, one fused list per query.

    Parameters are ``MixRetrieveRanker``'s (``top_k``, ``baseline``, ``amplitude``, ``slope``, ``midpoint``,
    ``score_threshold``, which applies to the fused score);
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
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Fuse each query's dense and sparse candidates and keep its best ``top_k``, none whose fused score is below
        the threshold.

        :param queries: the queries; each one's length in characters sets its dense weight.
        :param dense_candidates: a dense retriever's candidates, one list per query.
        :param sparse_candidates: a BM25 retriever's candidates, one list per query.
        :param top_k: how many to return per query (1..10000); defaults to the init value.
        :param score_threshold: minimum fused score for this run; defaults to the init value.
        :returns: ``{"documents": [[...], ...]}``, one list per query, best first.
        :raises ValueError: for a bad query (named ``queries[i]``), ``top_k`` or ``score_threshold``, a side whose
            number of lists differs from the number of queries or that came through the other side's socket, or a
            score that is not finite.
        """
        check_queries(queries)
        top_k = self._resolve_top_k(top_k)
        threshold = self._resolve_threshold(score_threshold)
        connected = sides(len(queries), dense_candidates, sparse_candidates)
        with collector_paused():
            fused = [self._fuse_query(q, query, connected, top_k, threshold) for q, query in enumerate(queries)]
        return {"documents": fused}

    def _fuse_query(
        self, q: int, query: str, connected: list[tuple[Side, Candidates]], top_k: int, threshold: float | None
    ) -> list[Document]:
        """``MixRetrieveRanker``'s fusion of query ``q`` (``mix_fusion.fused_scores``: normalise per side, merge by
        id, weigh), then its best ``top_k`` less those below THRESHOLD; each passage as first found (dense before
        sparse), its stored hit."""
        raw: dict[Side, dict[str, float]] = {"dense": {}, "sparse": {}}
        found: dict[str, Document] = {}
        for side, candidates in connected:
            ids, hits = candidates.ids(q), candidates.hits(q)
            raw[side] = best_scores(ids, checked_scores(candidates, q, f"{side}_candidates"))
            if not found and len(raw[side]) == len(ids):  # the first side, no passage listed twice: all new
                found = dict(zip(ids, hits, strict=True))
            else:
                for doc_id, hit in zip(ids, hits, strict=True):
                    found.setdefault(doc_id, hit)
        fused = fused_scores(self.dense_weight(query), raw["dense"], raw["sparse"])
        scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
        chosen = above(scores, top_k_order(scores, top_k), threshold)
        fused_ids = list(fused)
        return outputs([found[fused_ids[i]] for i in chosen], scores[chosen].tolist(), raw)


def outputs(found: list[Document], scores: list[float], raw: dict[Side, dict[str, float]]) -> list[Document]:
    """
    The output documents, new: each found passage with its fused score, and in its own meta (without
    ``retrieval_type``) the sides that found it (``retrieval_sources``) and its raw score on each
    (``dense_score``, ``sparse_score``). Each meta is one dict display and each Document is filled in place, no
    call per document: at top_k 100 a batch returns tens of thousands.
    """
    dense, sparse = raw.get("dense", {}), raw.get("sparse", {})
    documents = []
    for base, score in zip(found, scores, strict=True):
        doc_id = base.id
        dense_score, sparse_score = dense.get(doc_id, _MISSING), sparse.get(doc_id, _MISSING)
        if sparse_score is _MISSING:
            meta = {**base.meta, "retrieval_sources": ["dense"], "dense_score": dense_score}
        elif dense_score is _MISSING:
            meta = {**base.meta, "retrieval_sources": ["sparse"], "sparse_score": sparse_score}
        else:
            meta = {
                **base.meta,
                "retrieval_sources": ["dense", "sparse"],
                "dense_score": dense_score,
                "sparse_score": sparse_score,
            }
        if "retrieval_type" in meta:
            del meta["retrieval_type"]
        document = blank_document()
        fields = document.__dict__
        fields.update(base.__dict__)
        fields["score"], fields["meta"] = score, meta
        documents.append(document)
    return documents
