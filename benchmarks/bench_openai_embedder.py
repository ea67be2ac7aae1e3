"""OpenAI-compatible embedding throughput: batches in flight at once vs one after another, ours vs Haystack's.

The server is tests/support/servers/openai_compatible.py in its own process on 127.0.0.1, answering every request
after a fixed delay (`--delay-s`, a stand-in for network and model time); so the rows measure how the clients
use that time, not how fast a model runs. All sides embed the same documents with the same `batch_size` through
the real `openai` SDK. Rounds alternate ABBA after a warm-up (benchmarks/_timing.py); each side reports its
median, as documents (or queries) per second, and `ratio` = ours / peer:

* `concurrency=8 vs concurrency=1`: our `OpenAIDocumentEmbedder` with 8 requests in flight vs the same component
  sending one at a time (the gain of UltraRAG's `concurrency` option; at most 8x);
* `vs Haystack OpenAIDocumentEmbedder`: ours at `concurrency=8` vs Haystack's, which sends batches one by one;
* `concurrency=1 vs Haystack`: both sequential, so the cost of our answer checks and retry wrapper shows (~1);
* `text embedder vs Haystack`: one query per call, no server delay: per-call overhead (~1).

    .venv/bin/python benchmarks/bench_openai_embedder.py [--size small|large] [--delay-s 0.05]
"""

import argparse
import json
import select
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _timing import median_seconds_abba
from haystack import Document
from haystack.components.embedders import OpenAIDocumentEmbedder as HaystackDocumentEmbedder
from haystack.components.embedders import OpenAITextEmbedder as HaystackTextEmbedder
from haystack.utils import Secret

from components.embedders import OpenAIDocumentEmbedder, OpenAITextEmbedder

SERVER = Path(__file__).resolve().parent.parent / "tests" / "support" / "servers" / "openai_compatible.py"
KEY = "sk-bench"
SIZES = {"small": (256, 16, 3), "large": (2048, 32, 5)}  # documents, batch size, timed rounds
CONCURRENCY = 8


@contextmanager
def server(delay_s: float) -> Iterator[str]:
    """Start the test server in its own process with a fixed per-request delay; yield its base URL."""
    command = [sys.executable, str(SERVER), "--port", "0", "--api-key", KEY, "--delay-s", str(delay_s)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready and proc.stdout else ""
        if not line.startswith("READY "):
            raise RuntimeError(f"openai_compatible_server.py did not start (exit code {proc.poll()}, said {line!r})")
        yield line.split()[1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def documents(n: int) -> list[Document]:
    """`n` short passages of varied length (the server's work does not depend on them)."""
    return [Document(id=f"d{i}", content=f"passage {i}: " + "lorem ipsum " * (1 + i % 20)) for i in range(n)]


def ours(url: str, batch_size: int, concurrency: int) -> OpenAIDocumentEmbedder:
    return OpenAIDocumentEmbedder(
        base_url=url,
        api_key=Secret.from_token(KEY),
        model_name="bench",
        batch_size=batch_size,
        concurrency=concurrency,
        progress_bar=False,
    )


def haystacks(url: str, batch_size: int) -> HaystackDocumentEmbedder:
    return HaystackDocumentEmbedder(
        api_key=Secret.from_token(KEY),
        model="bench",
        api_base_url=url,
        batch_size=batch_size,
        progress_bar=False,
        raise_on_failure=True,
    )


def row(
    name: str, count: int, rounds: int, mine: Callable[[], object], peer: Callable[[], object], note: str
) -> dict[str, Any]:
    """Time both sides ABBA and report documents per second; ratio = ours / peer."""
    mine_s, peer_s = median_seconds_abba(rounds, mine, peer)
    return {"benchmark": name, "ours": count / mine_s, "peer": count / peer_s, "unit": "docs/s", "note": note}


def document_rows(size: str, delay_s: float) -> list[dict[str, Any]]:
    """The three corpus rows, against one server with a fixed delay."""
    n, batch_size, rounds = SIZES[size]
    docs = documents(n)
    with server(delay_s) as url:
        fast, slow, peer = ours(url, batch_size, CONCURRENCY), ours(url, batch_size, 1), haystacks(url, batch_size)
        setting = f"{n} docs, batch_size={batch_size}, {n // batch_size} requests, {delay_s * 1000:.0f} ms/request"
        return [
            row(
                f"openai document embedder: concurrency={CONCURRENCY} vs concurrency=1",
                n,
                rounds,
                lambda: fast.run(documents=docs),
                lambda: slow.run(documents=docs),
                setting,
            ),
            row(
                f"openai document embedder (concurrency={CONCURRENCY}) vs Haystack OpenAIDocumentEmbedder",
                n,
                rounds,
                lambda: fast.run(documents=docs),
                lambda: peer.run(documents=docs),
                setting,
            ),
            row(
                "openai document embedder (concurrency=1) vs Haystack OpenAIDocumentEmbedder",
                n,
                rounds,
                lambda: slow.run(documents=docs),
                lambda: peer.run(documents=docs),
                setting + "; both sequential: the cost of our checks",
            ),
        ]


def text_row(size: str) -> dict[str, Any]:
    """One query per call against a server without delay: per-call overhead of ours vs Haystack's."""
    calls = 200 if size == "small" else 1000
    with server(0.0) as url:
        mine = OpenAITextEmbedder(base_url=url, api_key=Secret.from_token(KEY), model_name="bench")
        peer = HaystackTextEmbedder(api_key=Secret.from_token(KEY), model="bench", api_base_url=url)

        def loop(embedder: OpenAITextEmbedder | HaystackTextEmbedder) -> Callable[[], None]:
            def queries() -> None:
                for i in range(calls):
                    embedder.run(text=f"query {i}")

            return queries

        result = row("openai text embedder vs Haystack OpenAITextEmbedder", calls, 3, loop(mine), loop(peer), "")
        result["unit"], result["note"] = "queries/s", f"{calls} sequential single-query calls, no server delay"
        return result


def run(size: str = "small", delay_s: float = 0.05) -> list[dict[str, Any]]:
    """Benchmark rows for benchmarks/run.py."""
    return [*document_rows(size, delay_s), text_row(size)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--delay-s", type=float, default=0.05, help="seconds the server waits before each answer")
    args = parser.parse_args()
    for result in run(args.size, args.delay_s):
        result["ratio"] = result["ours"] / result["peer"]
        print(json.dumps({key: round(v, 2) if isinstance(v, float) else v for key, v in result.items()}))
