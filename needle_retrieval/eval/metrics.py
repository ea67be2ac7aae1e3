"""Retrieval metrics over a run, computed with pytrec_eval (the C trec_eval that BEIR uses).

Why pytrec_eval and not ranx: on this 2-core machine ranx's numba kernels take 45-50 s to compile on the
first call of a fresh environment, and even with numba's on-disk cache a new process pays ~2 s of import
plus ~4 s before the first result; pytrec_eval imports and scores 300 queries x 100 docs in ~0.2 s, and
its numbers are the ones BEIR publishes (nDCG with linear gain; scores compared as 32-bit floats, ties broken by
doc id, descending: ``needle_retrieval.search.trec_scores``).

Two things trec_eval does that we do not want, and how we avoid them:

* it silently leaves out queries that have no retrieved document; we score them 0 and count them;
* it re-sorts a run by score, which would scramble the pipeline's order when scores tie or are absent;
  :func:`run_from_rankings` turns ranked id lists into scores that keep the order exactly.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytrec_eval

from needle_retrieval.search.trec_scores import trec_order_key

RECALL_CURVE_DEPTH = 100
HEADLINE_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map@100")
_TREC_MEASURES = {"ndcg_cut.10", "map_cut.100", "recall." + ",".join(map(str, range(1, RECALL_CURVE_DEPTH + 1)))}

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class RunScores:
    """Metrics of one run, averaged over every judged query (a query with no retrieved doc scores 0).

    ``metrics`` has the keys of ``HEADLINE_METRICS``; ``recall_curve[k - 1]`` is the mean recall@k for
    k = 1..100; ``per_query_ndcg10`` maps each judged query id (qrels order) to its nDCG@10.
    """

    metrics: dict[str, float]
    n_queries: int
    recall_curve: list[float]
    per_query_ndcg10: dict[str, float]


def evaluate_run(run: Run, qrels: Qrels) -> RunScores:
    """Score ``run`` (query id -> {doc id: score}, higher is better) against ``qrels``.

    Every query of ``qrels`` counts; a query id in ``run`` that ``qrels`` lacks is an error (it usually
    means the wrong split was run). Raises ``ValueError`` naming the query or document at fault.
    """
    _check_qrels(qrels)
    ranked = {qid: _rank(qid, docs) for qid, docs in run.items()}
    unknown = [qid for qid in ranked if qid not in qrels]
    if unknown:
        raise ValueError(
            f"run: {len(unknown)} query id(s) are not in the qrels, e.g. {unknown[0]!r}; run only the judged queries"
        )
    judged = {qid: dict(docs) for qid, docs in qrels.items()}
    full = pytrec_eval.RelevanceEvaluator(judged, _TREC_MEASURES).evaluate(_as_scores(ranked, depth=None))
    top10 = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"}).evaluate(_as_scores(ranked, depth=10))
    return _aggregate(list(qrels), full, top10)


def run_from_rankings(rankings: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Turn ranked doc-id lists (best first) into a run whose scores reproduce that order exactly.

    A doc id that appears twice in one ranking (e.g. two chunks of one document) keeps its best rank.
    """
    run: dict[str, dict[str, float]] = {}
    for qid, doc_ids in rankings.items():
        scores: dict[str, float] = {}
        for rank, doc_id in enumerate(doc_ids):
            scores.setdefault(doc_id, float(len(doc_ids) - rank))
        run[qid] = scores
    return run


def _check_qrels(qrels: Qrels) -> None:
    """Reject empty qrels, non-integer grades, and queries without a positive judgement (no defined nDCG)."""
    if not qrels:
        raise ValueError("qrels: no judged queries to evaluate")
    for qid, docs in qrels.items():
        for doc_id, grade in docs.items():
            if not isinstance(grade, int) or isinstance(grade, bool):
                raise ValueError(f"qrels: query {qid!r}, doc {doc_id!r}: relevance must be an integer, got {grade!r}")
        if not any(score > 0 for score in docs.values()):
            raise ValueError(f"qrels: query {qid!r} has no relevant document (every score <= 0)")


def _rank(qid: str, docs: Mapping[str, float]) -> list[str]:
    """Order one query's docs as trec_eval does: score as a 32-bit float descending, then doc id descending."""
    # A run often comes straight from JSON or numpy, whatever its annotation says: check what it really holds.
    entries: Mapping[str, object] = docs
    for doc_id, score in entries.items():
        if not isinstance(doc_id, str):
            raise ValueError(f"run: query {qid!r}: doc id must be a string, got {doc_id!r}")
        if not isinstance(score, numbers.Real) or math.isnan(score):
            raise ValueError(f"run: query {qid!r}, doc {doc_id!r}: score must be a number, got {score!r}")
    return sorted(docs, key=lambda doc_id: trec_order_key(doc_id, docs[doc_id]), reverse=True)


def _as_scores(ranked: Mapping[str, list[str]], depth: int | None) -> dict[str, dict[str, float]]:
    """Give each ranked doc a score that trec_eval sorts back into the same order, cut at ``depth``."""
    return {
        qid: {doc_id: float(len(ids) - rank) for rank, doc_id in enumerate(ids[:depth])} for qid, ids in ranked.items()
    }


def _aggregate(
    query_ids: list[str], full: Mapping[str, Mapping[str, float]], top10: Mapping[str, Mapping[str, float]]
) -> RunScores:
    """Average per-query measures over all judged queries, a missing query counting as 0."""

    def mean(table: Mapping[str, Mapping[str, float]], measure: str) -> float:
        return sum(table.get(qid, {}).get(measure, 0.0) for qid in query_ids) / len(query_ids)

    metrics = {
        "ndcg@10": mean(full, "ndcg_cut_10"),
        "recall@10": mean(full, "recall_10"),
        "recall@100": mean(full, "recall_100"),
        "mrr@10": mean(top10, "recip_rank"),
        "map@100": mean(full, "map_cut_100"),
    }
    return RunScores(
        metrics=metrics,
        n_queries=len(query_ids),
        recall_curve=[mean(full, f"recall_{k}") for k in range(1, RECALL_CURVE_DEPTH + 1)],
        per_query_ndcg10={qid: float(full.get(qid, {}).get("ndcg_cut_10", 0.0)) for qid in query_ids},
    )
