"""The result of one evaluation run, its JSON file, and side-by-side tables of several runs.

JSON schema (``needle eval --json FILE``), one object, keys always present and in this order::

    {
      "schema": "needle.eval/1",          # bumped when a key changes meaning
      "name": str,                         # label of the run, e.g. "bm25" or "dense+mix"
      "dataset": str,                      # dataset directory name, e.g. "scifact"
      "split": str,                        # qrels split, e.g. "test"
      "mode": str,                         # retrieval mode as the CLI names it
      "n_queries": int,                    # judged queries scored (missing results count as 0)
      "metrics": {"ndcg@10": float, "recall@10": float, "recall@100": float,
                  "mrr@10": float, "map@100": float},
      "queries_per_second": float | null,  # batch throughput over all queries (batches of 64), searches only
      "index_build_seconds": float | null, # time to build the index, null when reused (or a --pipeline file)
      "embedding_cache_hit": bool | null,  # true when document embeddings came from a cache
      "params": {str: any JSON},           # free-form configuration (model, top_k, k1, b, ...)
      "recall_curve": [float] * 100,       # mean recall@k for k = 1..100
      "per_query_ndcg10": {query id: float},
      # added later; files written before them load with null (see needle.eval.timing):
      "index_reused": bool | null,         # true: the live index fit the corpus content and was searched as is
      "model_load_seconds": float | null,  # opening the search pipeline: stores, models, warm-up
      "warmup_seconds": float | null,      # the first query, answered once before any timing
      "latency_p50_ms": float | null,      # median time of one query sent alone
      "latency_p99_ms": float | null,      # 99th percentile of the same
      "latency_queries": int | null        # how many queries were timed alone (all, or 200 evenly spaced)
    }

``queries_per_second`` counts the searches only: index building, model loading and the warm-up query are
timed apart (the fields above), so the figure is what a warm, loaded pipeline answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needle.eval.metrics import HEADLINE_METRICS, RECALL_CURVE_DEPTH, RunScores

if TYPE_CHECKING:
    from needle.eval.timing import SearchTimings

SCHEMA = "needle.eval/1"
METRIC_LABELS = {
    "ndcg@10": "nDCG@10",
    "recall@10": "Recall@10",
    "recall@100": "Recall@100",
    "mrr@10": "MRR@10",
    "map@100": "MAP@100",
}


class ResultFileError(ValueError):
    """A results JSON file is unreadable or does not follow the ``needle.eval/1`` schema."""


@dataclass
class EvalResult:
    """Everything one ``needle eval`` run measured; see the module docstring for the JSON form."""

    name: str
    dataset: str
    split: str
    mode: str
    n_queries: int
    metrics: dict[str, float]
    queries_per_second: float | None = None
    index_build_seconds: float | None = None
    embedding_cache_hit: bool | None = None
    params: dict[str, Any] = field(default_factory=dict)
    recall_curve: list[float] = field(default_factory=list)
    per_query_ndcg10: dict[str, float] = field(default_factory=dict)
    index_reused: bool | None = None
    model_load_seconds: float | None = None
    warmup_seconds: float | None = None
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_queries: int | None = None

    @classmethod
    def from_scores(
        cls,
        scores: RunScores,
        *,
        name: str,
        dataset: str,
        split: str,
        mode: str,
        queries_per_second: float | None = None,
        index_build_seconds: float | None = None,
        embedding_cache_hit: bool | None = None,
        params: dict[str, Any] | None = None,
        index_reused: bool | None = None,
        model_load_seconds: float | None = None,
        timings: SearchTimings | None = None,
    ) -> EvalResult:
        """Wrap :func:`evaluate_run`'s scores with the run's labels and what the caller measured.

        ``timings`` (``needle.eval.timing``) fills the warm-up and latency fields; its ``queries_per_second``
        is used when the ``queries_per_second`` argument is None.
        """
        return cls(
            name=name,
            dataset=dataset,
            split=split,
            mode=mode,
            n_queries=scores.n_queries,
            metrics=dict(scores.metrics),
            queries_per_second=queries_per_second if timings is None else timings.queries_per_second,
            index_build_seconds=index_build_seconds,
            embedding_cache_hit=embedding_cache_hit,
            params=dict(params or {}),
            recall_curve=list(scores.recall_curve),
            per_query_ndcg10=dict(scores.per_query_ndcg10),
            index_reused=index_reused,
            model_load_seconds=model_load_seconds,
            warmup_seconds=None if timings is None else timings.warmup_seconds,
            latency_p50_ms=None if timings is None else timings.latency_p50_ms,
            latency_p99_ms=None if timings is None else timings.latency_p99_ms,
            latency_queries=None if timings is None else timings.latency_queries,
        )

    def to_json(self) -> str:
        """Serialise to the documented schema (NaN is refused: JSON has no NaN)."""
        return json.dumps({"schema": SCHEMA, **asdict(self)}, indent=2, allow_nan=False) + "\n"

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path``, creating parent directories."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_json(cls, text: str, source: str = "<string>") -> EvalResult:
        """Parse and validate a ``needle.eval/1`` document; errors name ``source`` and the key at fault."""
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as error:
            raise ResultFileError(f"{source}: not valid JSON ({error.msg}, line {error.lineno})") from None
        if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
            found = obj.get("schema") if isinstance(obj, dict) else type(obj).__name__
            raise ResultFileError(f"{source}: key 'schema' must be {SCHEMA!r}, got {found!r}")
        values = {f.name: _checked(obj, f.name, source) for f in fields(cls)}
        return cls(**values)

    @classmethod
    def load(cls, path: str | Path) -> EvalResult:
        """Read a results file written by :meth:`save`."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ResultFileError(f"{path}: cannot read results file ({error.strerror})") from None
        return cls.from_json(text, source=str(path))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_duration(value: Any) -> bool:
    """A number of seconds or milliseconds, or null (not measured)."""
    return value is None or (_is_number(value) and value >= 0)


_CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "name": ("a string", lambda v: isinstance(v, str)),
    "dataset": ("a string", lambda v: isinstance(v, str)),
    "split": ("a string", lambda v: isinstance(v, str)),
    "mode": ("a string", lambda v: isinstance(v, str)),
    "n_queries": ("an integer >= 0", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "metrics": (
        f"an object with numbers for {', '.join(HEADLINE_METRICS)}",
        lambda v: isinstance(v, dict) and all(_is_number(v.get(m)) for m in HEADLINE_METRICS),
    ),
    "queries_per_second": ("a number or null", lambda v: v is None or _is_number(v)),
    "index_build_seconds": ("a number or null", lambda v: v is None or _is_number(v)),
    "embedding_cache_hit": ("true, false or null", lambda v: v is None or isinstance(v, bool)),
    "params": ("an object", lambda v: isinstance(v, dict)),
    "recall_curve": (
        f"a list of {RECALL_CURVE_DEPTH} numbers",
        lambda v: isinstance(v, list) and len(v) == RECALL_CURVE_DEPTH and all(map(_is_number, v)),
    ),
    "per_query_ndcg10": (
        "an object of query id -> number",
        lambda v: isinstance(v, dict) and all(map(_is_number, v.values())),
    ),
    "index_reused": ("true, false or null", lambda v: v is None or isinstance(v, bool)),
    "model_load_seconds": ("a number >= 0 or null", _is_duration),
    "warmup_seconds": ("a number >= 0 or null", _is_duration),
    "latency_p50_ms": ("a number >= 0 or null", _is_duration),
    "latency_p99_ms": ("a number >= 0 or null", _is_duration),
    "latency_queries": (
        "an integer >= 0 or null",
        lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    ),
}
# Keys added after the first files were written: a file without them reads as null (not measured).
OPTIONAL_KEYS = frozenset(
    {"index_reused", "model_load_seconds", "warmup_seconds", "latency_p50_ms", "latency_p99_ms", "latency_queries"}
)


def _checked(obj: dict[str, Any], key: str, source: str) -> Any:
    """Return ``obj[key]`` if present and of the documented type, else raise naming file and key."""
    if key not in obj and key in OPTIONAL_KEYS:
        return None
    if key not in obj:
        raise ResultFileError(f"{source}: missing key {key!r} (schema {SCHEMA})")
    expected, is_valid = _CHECKS[key]
    if not is_valid(obj[key]):
        raise ResultFileError(f"{source}: key {key!r} must be {expected}, got {_short(obj[key])}")
    return obj[key]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_results(paths: list[str | Path]) -> list[EvalResult]:
    """Load several results files, e.g. for ``needle eval --compare A.json B.json``."""
    return [EvalResult.load(path) for path in paths]


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
    """How many of the run's queries were timed one at a time: "300 of 300", or "200 of 1,000" for a sample."""
    if result.latency_queries is None:
        return "n/a"
    return f"{result.latency_queries:,} of {result.n_queries:,}"


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
