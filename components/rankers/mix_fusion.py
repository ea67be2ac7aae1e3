"""The query-length-weighted min-max mix, once: the weight curve and the normalise-and-fuse of two score maps.

Every mix in the project computes its scores here: ``MixRetrieveRanker`` and its batch twin (one query's Documents
at a time), ``MixBatchJoiner`` (one query's Candidates at a time) and the tuner (``needle_retrieval.tune.fit``, which
lays out every training query once and then tries thousands of curves):

- ``dense_weight``: ``w = baseline + amplitude * stable_sigmoid(slope * (length - midpoint))``, the dense side's
  share (the sparse side gets ``1 - w``);
- ``best_scores``: a side's raw score per passage id, first-seen order, a passage listed twice keeping its best;
- ``normalised``: those scores min-max scaled to [0, 1] (``min_max``: all equal -> 0, mxRAG's rule);
- ``fused_scores``: ``w * dense + (1 - w) * sparse`` per passage, a side that did not find it adding nothing.

The ranker, the batch ranker and the joiner call ``fused_scores``. The tuner shares the weight curve, ``best_scores``
and ``normalised`` (its matrices hold ``normalised`` values, 0 where a side did not find a passage) but fuses in
numpy, ``w[:, None] * dense + (1 - w)[:, None] * sparse`` over every query at once: calling ``fused_scores`` per
query and per curve would take its search from a second to minutes. Both sums are the same IEEE operations in the
same order (``0.0 + a`` is ``a``, ``a + 0.0`` is ``a``), so the tuner's scores are bit for bit the pipelines'.
"""

import math
from collections.abc import Sequence


def stable_sigmoid(x: float) -> float:
    """1 / (1 + e^-x) without overflow for any finite x (mxRAG's ``math.exp`` overflows past x ~ -709)."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def dense_weight(length: int, baseline: float, amplitude: float, slope: float, midpoint: float) -> float:
    """The dense side's weight for a query of LENGTH characters (``1 - w`` goes to the sparse side)."""
    return baseline + amplitude * stable_sigmoid(slope * (length - midpoint))


def min_max(scores: list[float]) -> list[float]:
    """
    Scale finite scores to [0, 1]; when all are equal, every one becomes 0 (mxRAG's rule).

    ``high - low`` overflows to inf for scores near ``±1e308`` (and ``inf / inf`` is NaN); then every score is
    halved first, which keeps each step finite (``high / 2 - low / 2`` is at most ``1.8e308``). Ordinary scores
    take the plain formula, exact as before.
    """
    low, high = min(scores), max(scores)
    if high == low:
        return [0.0] * len(scores)
    if math.isfinite(high - low):
        return [(s - low) / (high - low) for s in scores]
    span = high / 2 - low / 2
    return [min(1.0, (s / 2 - low / 2) / span) for s in scores]


def best_scores(ids: Sequence[str], scores: Sequence[float]) -> dict[str, float]:
    """Each passage's score by id, in first-seen order; a passage listed twice keeps its best score."""
    best = dict(zip(ids, scores, strict=True))
    if len(best) < len(ids):
        best = {}
        for doc_id, score in zip(ids, scores, strict=True):
            best[doc_id] = max(best.get(doc_id, -math.inf), score)
    return best


def normalised(raw: dict[str, float]) -> dict[str, float]:
    """RAW's scores (one side's, by id) min-max scaled, same ids, same order; empty for an empty side."""
    return dict(zip(raw, min_max(list(raw.values())), strict=True)) if raw else {}


def fused_scores(weight: float, dense: dict[str, float], sparse: dict[str, float]) -> dict[str, float]:
    """
    Each passage's fused score from the two sides' raw scores by id (``best_scores``): each side normalised, then
    ``weight * dense + (1 - weight) * sparse``, a side that did not find the passage adding nothing. Passages come
    in first-seen order, the dense side's first.
    """
    fused: dict[str, float] = {}
    for side_weight, raw in ((weight, dense), (1.0 - weight, sparse)):
        for doc_id, value in normalised(raw).items():
            fused[doc_id] = fused.get(doc_id, 0.0) + side_weight * value
    return fused
