"""Side-by-side tables of evaluation results: plain text for the terminal, GitHub markdown for the README.

One column per run (plus a delta column for exactly two runs); rows for the labels, the parameters, the fusion
setting the run searched with (``needle_retrieval.pipelines.fusion``), the metrics and the timings.
"""

from __future__ import annotations

import json
from typing import Any

from needle_retrieval.eval.report import EvalResult

METRIC_LABELS = {
    "ndcg@10": "nDCG@10",
    "recall@10": "Recall@10",
    "recall@100": "Recall@100",
    "mrr@10": "MRR@10",
    "map@100": "MAP@100",
}


def format_table(results: list[EvalResult]) -> str:
    """An aligned plain-text table, one column per run (plus a delta column for exactly two runs)."""
    header, rows = _table(results)
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def render(line: list[str]) -> str:
        cells = [line[0].ljust(widths[0])] + [
            cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True)
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([render(header), rule, *map(render, rows)]) + "\n"


def format_markdown_table(results: list[EvalResult]) -> str:
    """The same table as :func:`format_table` in GitHub markdown, for the README."""
    header, rows = _table(results)
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _table(results: list[EvalResult]) -> tuple[list[str], list[list[str]]]:
    """Header and body rows shared by both table formats."""
    if not results:
        raise ValueError("results: need at least one EvalResult to tabulate")
    header = [""] + [r.name for r in results]
    delta = len(results) == 2
    if delta:
        header.append(f"{results[1].name} - {results[0].name}")
    rows = [
        [label] + [str(getattr(r, key)) for r in results] + ([""] if delta else [])
        for label, key in (("dataset", "dataset"), ("split", "split"), ("mode", "mode"), ("queries", "n_queries"))
    ]
    for key in sorted({key for r in results for key in r.params}):
        rows.append([key] + [_short_param(r.params.get(key, "-")) for r in results] + ([""] if delta else []))
    rows.append(["fusion"] + [_fusion(r) for r in results] + ([""] if delta else []))
    for metric, label in METRIC_LABELS.items():
        values = [r.metrics[metric] for r in results]
        rows.append([label] + [f"{v:.4f}" for v in values] + ([f"{values[1] - values[0]:+.4f}"] if delta else []))
    timing = {
        "queries/s": [_number(r.queries_per_second, 1) for r in results],
        "latency p50 (ms)": [_number(r.latency_p50_ms, 1) for r in results],
        "latency p99 (ms)": [_number(r.latency_p99_ms, 1) for r in results],
        "latency queries": [_sample(r) for r in results],
        "index build (s)": ["reused" if r.index_reused else _number(r.index_build_seconds, 2) for r in results],
        "model load (s)": [_number(r.model_load_seconds, 2) for r in results],
        "warm-up (s)": [_number(r.warmup_seconds, 2) for r in results],
        "embedding cache": [_cache(r.embedding_cache_hit) for r in results],
    }
    rows += [[label, *cells] + ([""] if delta else []) for label, cells in timing.items()]
    if len(results) > 1:
        rows.append(
            [f"nDCG@10 win/tie/loss vs {results[0].name}", "-"]
            + [_win_tie_loss(results[0], r) for r in results[1:]]
            + ([""] if delta else [])
        )
    return header, rows


def _number(value: float | None, decimals: int) -> str:
    return "n/a" if value is None else f"{value:,.{decimals}f}"


def _sample(result: EvalResult) -> str:
    """How many of the run's queries were timed one at a time: "300 of 300", "200 of 1,000" for a sample, or
    "skipped" (``--latency-queries 0``)."""
    if result.latency_queries is None:
        return "n/a"
    if result.latency_queries == 0:
        return "skipped"
    return f"{result.latency_queries:,} of {result.n_queries:,}"


def _fusion(result: EvalResult) -> str:
    """The fusion a run searched with and the values its mode uses: "tuned: mix 0.15/0.4/0.03/50" (baseline,
    amplitude, slope, midpoint), "default: k 61" for rrf, "none" for a run that fuses nothing (or an old file)."""
    if result.fusion is None:
        return "none"
    if result.mode == "rrf":
        return f"{result.fusion['source']}: k {result.fusion['rrf']['k']}"
    mix = "/".join(f"{value:g}" for value in result.fusion["mix"].values())
    return f"{result.fusion['source']}: mix {mix}"


def _short_param(value: Any) -> str:
    """A configuration value in at most 40 characters (long paths keep their informative tail)."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 40 else "..." + text[-37:]


def _cache(hit: bool | None) -> str:
    return {None: "n/a", True: "hit", False: "miss"}[hit]


def _win_tie_loss(base: EvalResult, other: EvalResult) -> str:
    """Per-query nDCG@10 of ``other`` against ``base``: how many queries got better, equal, worse."""
    shared = base.per_query_ndcg10.keys() & other.per_query_ndcg10.keys()
    if (base.dataset, base.split) != (other.dataset, other.split) or not shared:
        return "n/a (other queries)"
    diffs = [other.per_query_ndcg10[q] - base.per_query_ndcg10[q] for q in shared]
    wins = sum(d > 1e-12 for d in diffs)
    losses = sum(d < -1e-12 for d in diffs)
    return f"{wins}/{len(diffs) - wins - losses}/{losses}"
