"""The result of one evaluation run and its JSON file (the tables of several runs: ``needle_retrieval.eval.table``).

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
      # added later; files written before them load with null (see needle_retrieval.eval.timing):
      "index_reused": bool | null,         # true: the live index fit the corpus content and was searched as is
      "model_load_seconds": float | null,  # opening the search pipeline: stores, models, warm-up
      "warmup_seconds": float | null,      # the first query, answered once before any timing
      "latency_p50_ms": float | null,      # median time of one query sent alone
      "latency_p99_ms": float | null,      # 99th percentile of the same
      "latency_queries": int | null,       # how many queries were timed alone (all, or --latency-queries N
                                           # evenly spaced, default 200; 0: not timed, both latencies null)
      "fusion": {                          # null: the run fuses nothing (dense, bm25, Milvus's own RRF, --pipeline)
        "source": "default" | "tuned" | "file",  # the rankers' defaults, DIR/fusion.json, or --fusion FILE
        "path": str | null,                # the fusion file read (null for the defaults)
        "mix": {"baseline": float, "amplitude": float, "slope": float, "midpoint": float},
        "rrf": {"k": int}
      } | null
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

from needle_retrieval.eval.metrics import HEADLINE_METRICS, RECALL_CURVE_DEPTH, RunScores
from needle_retrieval.pipelines.fusion import MIX_KEYS

if TYPE_CHECKING:
    from needle_retrieval.eval.timing import SearchTimings

SCHEMA = "needle.eval/1"
FUSION_SOURCES = ("default", "tuned", "file")


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
    fusion: dict[str, Any] | None = None

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
        fusion: dict[str, Any] | None = None,
    ) -> EvalResult:
        """Wrap :func:`evaluate_run`'s scores with the run's labels and what the caller measured.

        ``timings`` (``needle_retrieval.eval.timing``) fills the warm-up and latency fields; its ``queries_per_second``
        is used when the ``queries_per_second`` argument is None. ``fusion``: the fusion setting's record
        (``needle_retrieval.pipelines.fusion.FusionSetting.record``), None when the run fuses nothing.
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
            fusion=None if fusion is None else dict(fusion),
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


def _is_fusion(value: Any) -> bool:
    """Null, or a fusion record: its source, the file read, the mix curve's four numbers and the RRF k."""
    if value is None:
        return True
    if not isinstance(value, dict) or set(value) != {"source", "path", "mix", "rrf"}:
        return False
    mix, rrf = value["mix"], value["rrf"]
    return (
        value["source"] in FUSION_SOURCES
        and (value["path"] is None or isinstance(value["path"], str))
        and isinstance(mix, dict)
        and set(mix) == set(MIX_KEYS)
        and all(map(_is_number, mix.values()))
        and isinstance(rrf, dict)
        and set(rrf) == {"k"}
        and isinstance(rrf["k"], int)
        and not isinstance(rrf["k"], bool)
    )


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
    "fusion": (
        f"null or an object of source ({', '.join(FUSION_SOURCES)}), path, mix ({', '.join(MIX_KEYS)}) and rrf.k",
        _is_fusion,
    ),
}
# Keys added after the first files were written: a file without them reads as null (not measured).
OPTIONAL_KEYS = frozenset(
    {
        "index_reused",
        "model_load_seconds",
        "warmup_seconds",
        "latency_p50_ms",
        "latency_p99_ms",
        "latency_queries",
        "fusion",
    }
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
