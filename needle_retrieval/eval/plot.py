"""Draw one PNG that compares evaluation runs: the recall@k curve and the per-query nDCG@10 spread.

Matplotlib is driven through its object API on the Agg canvas: no pyplot global state, no display
needed, safe to call from a server or a test. It is imported on first use so that ``needle eval``
without ``--plot`` does not pay for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from needle_retrieval.eval.report import EvalResult

if TYPE_CHECKING:  # matplotlib is imported on first use, not with this module
    from matplotlib.axes import Axes

FIGURE_INCHES = (12.0, 4.8)
DPI = 110


def plot(results: list[EvalResult], path_png: str | Path) -> Path:
    """Write a two-panel PNG of ``results`` to ``path_png`` and return its path.

    Left: mean recall@k for k = 1..100, one line per run. Right: each run's per-query nDCG@10 sorted
    from best to worst against the share of queries, so runs over different query counts line up and
    the area under a line is its mean nDCG@10.
    """
    if not results:
        raise ValueError("results: need at least one EvalResult to plot")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGURE_INCHES, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    recall_axes, ndcg_axes = figure.subplots(1, 2)
    for result in results:
        _draw_recall(recall_axes, result)
        _draw_ndcg(ndcg_axes, result)
    _style(recall_axes, "Recall@k (mean over queries)", "k (documents retrieved)", "recall@k")
    recall_axes.set_xlim(1, len(results[0].recall_curve))
    _style(ndcg_axes, "Per-query nDCG@10, best to worst", "share of queries", "nDCG@10")
    ndcg_axes.set_xlim(0, 1)
    figure.suptitle(_title(results))
    target = Path(path_png)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, format="png")
    return target


def _draw_recall(axes: Axes, result: EvalResult) -> None:
    ks = range(1, len(result.recall_curve) + 1)
    label = f"{result.name} (R@100 {result.metrics['recall@100']:.3f})"
    axes.plot(ks, result.recall_curve, label=label, linewidth=1.8)


def _draw_ndcg(axes: Axes, result: EvalResult) -> None:
    values = sorted(result.per_query_ndcg10.values(), reverse=True)
    if not values:
        return
    share = [(i + 0.5) / len(values) for i in range(len(values))]
    label = f"{result.name} (mean {result.metrics['ndcg@10']:.3f})"
    axes.step(share, values, where="mid", label=label, linewidth=1.8)


def _style(axes: Axes, title: str, xlabel: str, ylabel: str) -> None:
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_ylim(0, 1.02)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best", fontsize="small")


def _title(results: list[EvalResult]) -> str:
    """Name the dataset(s) and split(s) the runs were scored on, with their query counts."""
    sets = sorted({f"{r.dataset} / {r.split} ({r.n_queries} queries)" for r in results})
    return "  vs  ".join(sets)
