"""How fast an evaluated setup answers, measured apart from everything that only happens once.

``needle eval`` times four phases separately: building (or reusing) the index, loading the search pipeline
and its models (``model_load_seconds``), one warm-up query (first-call costs: kernels picked on first use,
lazily loaded parts), and then the searches themselves:

- **batch throughput** (``queries_per_second``): every query, in batches of ``QUERY_BATCH`` as a bulk run sends
  them; these rankings are the ones scored;
- **single-query latency** (``latency_p50_ms``, ``latency_p99_ms``): queries sent one at a time to the same
  pipeline, as an interactive user sends them; all queries, or ``LATENCY_SAMPLE`` (``needle eval
  --latency-queries N``: N) evenly spaced ones when there are more (``latency_queries`` says how many). N = 0
  skips this pass: both figures are then None ("n/a"), and an eval of a slow mode takes half the time.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from haystack import Document

from needle_retrieval.defaults import QUERY_BATCH
from needle_retrieval.errors import NeedleError
from needle_retrieval.progress import Progress, track

LATENCY_SAMPLE = 200  # at most this many queries are timed one at a time, unless the caller says otherwise

Retrieve = Callable[[list[str]], list[list[Document]]]


@dataclass(frozen=True)
class SearchTimings:
    """What the searches of one evaluation took, the one-off costs left out."""

    queries_per_second: float  # all queries, in batches of QUERY_BATCH
    warmup_seconds: float  # the first query, answered once before any timing
    latency_p50_ms: float | None  # median time of one query sent alone; None when none was timed alone
    latency_p99_ms: float | None  # 99th percentile of the same
    latency_queries: int  # how many queries were timed one at a time (0: the pass was skipped)


def warm_up(retrieve: Retrieve, texts: list[str]) -> float:
    """Answer the first query once and discard the answer; returns the seconds it took."""
    start = time.perf_counter()
    if texts:
        retrieve(texts[:1])
    return time.perf_counter() - start


def run_queries(retrieve: Retrieve, queries: dict[str, str], label: str) -> tuple[dict[str, list[str]], float]:
    """Run every query in batches of ``QUERY_BATCH`` with a progress bar; returns (rankings, queries per second)."""
    ids, texts = list(queries), list(queries.values())
    rankings: dict[str, list[str]] = {}
    start = time.perf_counter()
    with Progress(total=len(ids), desc=f"searching ({label})", unit="q") as bar:
        for i in range(0, len(ids), QUERY_BATCH):
            for qid, docs in zip(ids[i : i + QUERY_BATCH], retrieve(texts[i : i + QUERY_BATCH]), strict=True):
                rankings[qid] = [d.id for d in docs]
            bar.update(len(ids[i : i + QUERY_BATCH]))
    return rankings, len(ids) / max(time.perf_counter() - start, 1e-9)


def latency_sample(texts: list[str], size: int = LATENCY_SAMPLE) -> list[str]:
    """All of TEXTS when there are at most SIZE, else SIZE of them evenly spaced: the same ones on every run."""
    if len(texts) <= size:
        return list(texts)
    return [texts[i * len(texts) // size] for i in range(size)]


def single_query_ms(retrieve: Retrieve, texts: list[str], label: str) -> list[float]:
    """Send each text alone and time it; returns the milliseconds of each, in order."""
    took: list[float] = []
    for text in track(texts, desc=f"latency ({label})", unit="q"):
        start = time.perf_counter()
        retrieve([text])
        took.append((time.perf_counter() - start) * 1000)
    return took


def check_latency_queries(count: int) -> int:
    """COUNT when it is a number of queries to time alone (0 or more), else a one-line error naming the option."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise NeedleError(f"--latency-queries must be an integer >= 0 (0 skips the latency pass), got {count!r}")
    return count


def time_searches(
    retrieve: Retrieve, queries: dict[str, str], label: str, latency_queries: int = LATENCY_SAMPLE
) -> tuple[dict[str, list[str]], SearchTimings]:
    """Warm up, run the throughput pass (whose rankings are returned for scoring), then time at most
    LATENCY_QUERIES single queries (none for 0)."""
    texts = list(queries.values())
    sample = latency_sample(texts, check_latency_queries(latency_queries))
    warmup = warm_up(retrieve, texts)
    rankings, qps = run_queries(retrieve, queries, label)
    if not sample:
        return rankings, SearchTimings(qps, warmup, None, None, 0)
    took = single_query_ms(retrieve, sample, label)
    p50, p99 = (float(v) for v in np.percentile(took, [50, 99]))
    return rankings, SearchTimings(qps, warmup, p50, p99, len(sample))
