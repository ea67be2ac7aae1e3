"""Fit fusion parameters offline: the dense and BM25 candidate lists of every query are fetched once, then the
mix curve and the RRF constant are searched in numpy without running retrieval again.

The offline fusion reproduces the pipelines exactly, ties included:
- mix (``MixRetrieveRanker``): the candidates are the dense list, then the BM25-only passages in BM25 order (the
  ranker's first-seen order), each side's best score per passage min-max normalised and the weight ``w`` of
  each query computed by the rankers' own functions (``components.rankers.mix_fusion``), fused as
  ``w * dense + (1 - w) * sparse`` in numpy over every query at once (that module says why not by its
  ``fused_scores``), then a stable sort;
- rrf (Haystack's ``_reciprocal_rank_fusion``): ``(1 / (k + rank_dense) + 1 / (k + rank_bm25)) / (2 / k)`` with
  0-based ranks, then a stable sort of the joiner's first-seen order, which is the BM25 list first (its variadic
  input receives bm25 before dense: checked, all 300 SciFact test lists equal the pipeline's at k = 61).
The search scores nDCG@10 in numpy (linear gain, trec_eval's formula) because it tries thousands of settings;
the figures `needle tune` reports are scored again by ``needle_retrieval.eval.metrics.evaluate_run``, as `needle eval`
does.

A fitted value is installed only when it helps queries it was not fitted on (``guarded_mix``, ``guarded_rrf``):
every ``HOLD_OUT_EVERY``-th training query is held out, the value is fitted on the others, and it is kept when its
nDCG@10 on the held-out queries beats the default's by ``MARGIN``; otherwise the default is recorded. A best of
thousands of settings always looks better on the queries it was picked on: on Cranfield and Vaswani the RRF k
fitted on the training split (k = 2) lost 0.007 and 0.030 nDCG@10 on their test splits.
"""

import itertools
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from haystack import Document

from components.joiners.rrf_batch_joiner import RRF_K
from components.rankers.mix_fusion import best_scores, dense_weight, normalised
from needle_retrieval.pipelines.fusion import Mix

HOLD_OUT_EVERY = 5  # the 5th, 10th, ... training query checks the fit; the other four fifths fit it
# Kept only when it beats the default by this much nDCG@10 on the held-out queries: SciFact's fitted RRF k = 2
# gained 0.013 on the queries it was fitted on and 0.0008 on its test split; gains that small are what picking
# the best of many settings finds by chance, and not worth a value that may do worse elsewhere.
MARGIN = 0.005
CUTOFF = 10
RRF_KS = range(1, 201)
BASELINES = [round(0.05 * i, 2) for i in range(21)]
SLOPES = (0.01, 0.03, 0.1, 0.3, 1.0)
MIDPOINTS = (10.0, 25.0, 50.0, 75.0, 100.0, 150.0, 200.0)
Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CandidateMatrices:
    """Every query's candidates as padded matrices (row = query, column = candidate in the ranker's order)."""

    ids: list[list[str]]  # candidate ids per query, in the fused list's input order
    lengths: npt.NDArray[np.int64]  # len(query) in characters, what the mix weight reads
    dense: Matrix  # min-max normalised dense score, 0 where the dense side did not find the passage
    sparse: Matrix  # the same for BM25
    dense_rank: Matrix  # 0-based rank in the dense list, inf where absent
    sparse_rank: Matrix
    rrf_position: Matrix  # place in the RRF joiner's first-seen order (BM25 list, then dense-only passages)
    valid: npt.NDArray[np.bool_]  # False on padding
    gains: Matrix  # graded relevance from the qrels (0 when not judged relevant)
    ideal: npt.NDArray[np.float64]  # ideal DCG@10 per query


def candidate_matrices(
    queries: list[str], dense: list[list[Document]], sparse: list[list[Document]], qrels: list[dict[str, int]]
) -> CandidateMatrices:
    """Lay out each query's two result lists (best first) and judgements as matrices for the search."""
    rows = [_row(d, s) for d, s in zip(dense, sparse, strict=True)]
    width = max((len(ids) for ids, *_ in rows), default=0) or 1
    shape = (len(rows), width)
    dense_m, sparse_m, gains = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    dense_r, sparse_r = np.full(shape, np.inf), np.full(shape, np.inf)
    valid = np.zeros(shape, dtype=bool)
    for i, (ids, dn, sn, dr, sr) in enumerate(rows):
        n = len(ids)
        dense_m[i, :n], sparse_m[i, :n], dense_r[i, :n], sparse_r[i, :n] = dn, sn, dr, sr
        gains[i, :n] = [max(qrels[i].get(doc_id, 0), 0) for doc_id in ids]
        valid[i, :n] = True
    ideal = np.array([_dcg(sorted((g for g in q.values() if g > 0), reverse=True)) for q in qrels])
    lengths = np.array([len(q) for q in queries], dtype=np.int64)
    position = np.where(np.isinf(sparse_r), width + dense_r, sparse_r)  # BM25 rank, then dense-only in dense order
    return CandidateMatrices(
        [r[0] for r in rows], lengths, dense_m, sparse_m, dense_r, sparse_r, position, valid, gains, ideal
    )


Row = tuple[list[str], list[float], list[float], list[float], list[float]]


def _row(dense: list[Document], sparse: list[Document]) -> Row:
    """One query: ids in first-seen order, normalised scores and 0-based ranks per side (best score per id)."""
    sides = []
    for docs in (dense, sparse):
        ids = [doc.id for doc in docs]
        rank: dict[str, int] = {}
        for position, doc_id in enumerate(ids):
            rank.setdefault(doc_id, position)
        sides.append((normalised(best_scores(ids, [float(doc.score or 0.0) for doc in docs])), rank))
    ids = list(dict.fromkeys([d.id for d in dense] + [d.id for d in sparse]))
    (dn, dr), (sn, sr) = sides
    return (
        ids,
        [dn.get(i, 0.0) for i in ids],
        [sn.get(i, 0.0) for i in ids],
        [float(dr.get(i, np.inf)) for i in ids],
        [float(sr.get(i, np.inf)) for i in ids],
    )


def _dcg(gains: Iterable[float]) -> float:
    """DCG@10 of gains in rank order: sum of gain / log2(rank + 1), ranks from 1."""
    return float(sum(g / np.log2(r + 2) for r, g in enumerate(list(gains)[:CUTOFF])))


def mix_weights(mix: Mix, lengths: npt.NDArray[np.int64]) -> Matrix:
    """The dense weight per query (``mix_fusion.dense_weight``, as ``MixRetrieveRanker.dense_weight`` computes it)."""
    table = {n: dense_weight(n, mix.baseline, mix.amplitude, mix.slope, mix.midpoint) for n in set(lengths.tolist())}
    return np.array([table[n] for n in lengths.tolist()], dtype=np.float64)


def mix_scores(c: CandidateMatrices, mix: Mix) -> Matrix:
    """The fused score of every candidate (``-inf`` on padding), as the ranker sums it."""
    w = mix_weights(mix, c.lengths)
    scores = w[:, None] * c.dense + (1.0 - w)[:, None] * c.sparse
    return np.where(c.valid, scores, -np.inf)


def rrf_scores(c: CandidateMatrices, k: int) -> Matrix:
    """Haystack's reciprocal rank fusion score of every candidate (``-inf`` on padding)."""
    scores = (1.0 / (k + c.dense_rank) + 1.0 / (k + c.sparse_rank)) / (2 / k)
    return np.where(c.valid, scores, -np.inf)


def order(scores: Matrix, ties: Matrix | None = None, depth: int | None = CUTOFF) -> npt.NDArray[np.int64]:
    """Column indexes best first per row; equal scores go by ``ties`` ascending (None: column order, the mix
    ranker's stable sort)."""
    if ties is None:
        return np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    return np.lexsort((ties, -scores), axis=1)[:, :depth]


def ndcg(c: CandidateMatrices, scores: Matrix, ties: Matrix | None = None) -> float:
    """Mean nDCG@10 over the queries for these fused scores (padding never ranks: it is ``-inf``)."""
    top = order(scores, ties)
    picked = np.take_along_axis(c.gains, top, axis=1) * np.take_along_axis(c.valid, top, axis=1)
    dcg = (picked / np.log2(np.arange(2, top.shape[1] + 2))).sum(axis=1)
    return float(np.mean(np.divide(dcg, c.ideal, out=np.zeros_like(dcg), where=c.ideal > 0)))


def rankings(c: CandidateMatrices, scores: Matrix, depth: int, ties: Matrix | None = None) -> list[list[str]]:
    """The fused lists of doc ids (best first, at most DEPTH), as the pipeline would answer."""
    top = order(scores, ties, depth)
    return [[ids[j] for j in row if j < len(ids)] for ids, row in zip(c.ids, top.tolist(), strict=True)]


def mix_grid() -> list[Mix]:
    """Every mix curve the search tries: baseline and amplitude in steps of 0.05, slopes and midpoints from a
    few characters to a paragraph; a flat curve (amplitude 0) once per baseline."""
    grid = []
    for baseline in BASELINES:
        grid.append(Mix(baseline, 0.0, 1.0, 6.0))
        amplitudes = [a for a in BASELINES[1:] if baseline + a <= 1.0 + 1e-9]
        for amplitude, slope, midpoint in itertools.product(amplitudes, SLOPES, MIDPOINTS):
            grid.append(Mix(baseline, round(min(amplitude, 1.0 - baseline), 2), slope, midpoint))
    return grid


def fit_mix(c: CandidateMatrices) -> tuple[Mix, float]:
    """The grid's best mix curve by mean nDCG@10 (the first one on a tie) and its nDCG."""
    best, best_ndcg = Mix(), ndcg(c, mix_scores(c, Mix()))
    for mix in mix_grid():
        value = ndcg(c, mix_scores(c, mix))
        if value > best_ndcg:
            best, best_ndcg = mix, value
    return best, best_ndcg


def fit_rrf(c: CandidateMatrices) -> tuple[int, float]:
    """The RRF constant k in 1..200 with the best mean nDCG@10 (the smallest on a tie) and its nDCG."""
    values = [(rrf_ndcg(c, k), -k) for k in RRF_KS]
    value, neg_k = max(values)
    return -neg_k, value


def rrf_ndcg(c: CandidateMatrices, k: int) -> float:
    """Mean nDCG@10 of RRF with constant K, ties in the joiner's first-seen order."""
    return ndcg(c, rrf_scores(c, k), c.rrf_position)


@dataclass(frozen=True)
class HeldOut:
    """How a value fitted on the other training queries did on the held-out ones, against the default."""

    queries: int  # held-out queries (0: too few training queries to hold any out, so nothing is kept)
    value: dict[str, float] | int | None  # the value fitted on the other queries (a mix curve, or k)
    fitted: float | None  # its nDCG@10 on the held-out queries (None when there are none)
    default: float | None  # the default's
    kept: bool  # fitted - default >= MARGIN: the fitted value is installed, else the default

    def as_json(self) -> dict[str, Any]:
        """The record ``fusion.json``'s ``fitted_on.held_out`` keeps of it."""
        return {
            "queries": self.queries,
            "value": self.value,
            "ndcg@10": {"fitted": self.fitted, "default": self.default},
            "kept": self.kept,
        }


def split(c: CandidateMatrices) -> tuple[CandidateMatrices, CandidateMatrices]:
    """(fit part, held-out part): every HOLD_OUT_EVERY-th query, in dataset order, is held out."""
    rows = np.arange(len(c.ids))
    held = rows % HOLD_OUT_EVERY == HOLD_OUT_EVERY - 1
    return subset(c, rows[~held]), subset(c, rows[held])


def subset(c: CandidateMatrices, rows: npt.NDArray[np.int64]) -> CandidateMatrices:
    """The candidates of these query rows only (the padding width stays: padding never ranks)."""
    return CandidateMatrices(
        [c.ids[i] for i in rows.tolist()], c.lengths[rows], c.dense[rows], c.sparse[rows], c.dense_rank[rows],
        c.sparse_rank[rows], c.rrf_position[rows], c.valid[rows], c.gains[rows], c.ideal[rows],
    )  # fmt: skip


NONE_HELD_OUT = HeldOut(0, None, None, None, False)  # under HOLD_OUT_EVERY training queries: nothing to check on


def verdict(value: dict[str, float] | int, fitted: float, default: float, queries: int) -> HeldOut:
    """Kept when the fitted value's held-out nDCG@10 beats the default's by MARGIN."""
    return HeldOut(queries, value, fitted, default, fitted - default >= MARGIN)


def guarded_mix(c: CandidateMatrices) -> tuple[Mix, HeldOut]:
    """The mix curve fitted on the fit part when it beats the default on the held-out part, else the default."""
    fit, held = split(c)
    if not held.ids:
        return Mix(), NONE_HELD_OUT
    mix, _ = fit_mix(fit)
    scores = ndcg(held, mix_scores(held, mix)), ndcg(held, mix_scores(held, Mix()))
    result = verdict(asdict(mix), *scores, len(held.ids))
    return (mix if result.kept else Mix()), result


def guarded_rrf(c: CandidateMatrices) -> tuple[int, HeldOut]:
    """The RRF k fitted on the fit part when it beats k = 61 on the held-out part, else 61."""
    fit, held = split(c)
    if not held.ids:
        return RRF_K, NONE_HELD_OUT
    k, _ = fit_rrf(fit)
    result = verdict(k, rrf_ndcg(held, k), rrf_ndcg(held, RRF_K), len(held.ids))
    return (k if result.kept else RRF_K), result
