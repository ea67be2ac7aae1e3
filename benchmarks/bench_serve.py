"""Load on `needle serve`: a bounded number of searches at a fixed concurrency to the served bm25, dense and hybrid
pipelines and to UltraRAG's /search, beside the same searches run in process
(``needle_retrieval.search.searcher.Searcher``).

    python benchmarks/bench_serve.py [--index DIR] [--requests 2000] [--concurrency 16] [--small] [--json OUT]

Without ``--index`` it builds ``samples/python_docs.jsonl`` (dense + BM25) in a temporary directory. Reports, per
target, throughput (requests/s), p50 and p99 latency (ms) and the error count (any answer but 200), and the
serving overhead as ratios: in-process throughput / served throughput and served p50 / in-process p50.
In-process searches run one at a time (one Python process, as the server's pipelines do).
"""

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "samples" / "python_docs.jsonl"
MODES = ("bm25", "dense", "hybrid")


def queries_from_sample(n: int = 50) -> list[str]:
    """Realistic short queries: the first sentence of sample passages, cut to eight words."""
    out = []
    with SAMPLE.open(encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["contents"].split("\n", 1)[-1]
            out.append(" ".join(text.split()[:8]))
            if len(out) == n:
                break
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def build_index(out: Path) -> None:
    cmd = [sys.executable, "-m", "needle_retrieval.cli", "index", str(SAMPLE), "--out", str(out), "--bm25"]
    subprocess.run(cmd, check=True, cwd=REPO, capture_output=True)


def start_server(index: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`needle serve INDEX` on PORT; returns once /status answers."""
    with log.open("wb") as sink:
        cmd = [sys.executable, "-m", "needle_retrieval.cli", "serve", str(index), "--port", str(port)]
        process = subprocess.Popen(cmd, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    end = time.monotonic() + 300
    while time.monotonic() < end:
        if process.poll() is not None:
            raise SystemExit(f"needle serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/status", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.terminate()
    raise SystemExit("needle serve did not start within 300 s")


def summary(latencies: list[float], seconds: float, errors: int) -> dict[str, float]:
    """Throughput, p50 and p99 (ms) and errors of one run."""
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {
        "requests": len(latencies),
        "throughput": len(latencies) / seconds,
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * p99,
        "errors": errors,
    }


async def load(url: str, bodies: list[dict[str, object]], concurrency: int) -> dict[str, float]:
    """POST every body, ``concurrency`` at a time; latency per request, errors = answers other than 200."""
    latencies: list[float] = []
    errors = 0
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def one(body: dict[str, object]) -> None:
            nonlocal errors
            async with gate:
                start = time.perf_counter()
                try:
                    answer = await client.post(url, json=body)
                    errors += answer.status_code != 200
                except httpx.HTTPError:
                    errors += 1
                latencies.append(time.perf_counter() - start)

        start = time.perf_counter()
        await asyncio.gather(*(one(body) for body in bodies))
        return summary(latencies, time.perf_counter() - start, errors)


def in_process(index: Path, mode: str, queries: list[str]) -> dict[str, float]:
    """The same searches through Searcher, one at a time."""
    from needle_retrieval.search.searcher import Searcher

    searcher = Searcher(index, mode=mode, top_k=5)
    searcher.search(queries[:2])  # warm
    latencies = []
    start = time.perf_counter()
    for query in queries:
        t = time.perf_counter()
        searcher.search([query])
        latencies.append(time.perf_counter() - t)
    return summary(latencies, time.perf_counter() - start, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--index", type=Path, help="a needle index with dense and BM25 parts (default: build the sample)"
    )
    parser.add_argument("--requests", type=int, default=2000, help="searches per target (default 2000)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight (default 16)")
    parser.add_argument("--small", action="store_true", help="200 searches per target")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    n = 200 if args.small else args.requests
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        index = args.index or Path(tmp) / "index"
        if args.index is None:
            build_index(index)
        pool = queries_from_sample()
        queries = [pool[i % len(pool)] for i in range(n)]
        port = free_port()
        server = start_server(index, port, Path(tmp) / "serve.log")
        try:
            base = f"http://127.0.0.1:{port}"
            served = {
                f"{mode}_search": asyncio.run(
                    load(f"{base}/{mode}_search/run", [{"query": q, "top_k": 5} for q in queries], args.concurrency)
                )
                for mode in MODES
            }
            search_bodies: list[dict[str, object]] = [{"query_list": [q], "top_k": 5} for q in queries]
            served["/search"] = asyncio.run(load(f"{base}/search", search_bodies, args.concurrency))
        finally:
            server.terminate()
            server.wait(timeout=60)
        local = {mode: in_process(index, mode, queries) for mode in MODES}
    report(served, local, n, args.concurrency, args.json)


def report(
    served: dict[str, dict[str, float]], local: dict[str, dict[str, float]], n: int, c: int, out: Path | None
) -> None:
    """A table, and the JSON file when asked."""
    print(f"{n} searches per target at concurrency {c} (served) / one at a time (in process)")
    head = f"{'target':16} {'q/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} | {'local q/s':>9} {'local p50':>9}"
    print(f"{head} | {'q/s ratio':>9} {'p50 ratio':>9}")
    rows = []
    for target, result in served.items():
        mode = "hybrid" if target == "/search" else target.split("_", 1)[0]
        mine = local[mode]
        row = {
            "target": target,
            "served": result,
            "in_process": mine,
            "throughput_ratio": mine["throughput"] / result["throughput"],
            "p50_ratio": result["p50_ms"] / mine["p50_ms"],
        }
        rows.append(row)
        print(
            f"{target:16} {result['throughput']:8.1f} {result['p50_ms']:8.1f} {result['p99_ms']:8.1f} "
            f"{result['errors']:6d} | {mine['throughput']:9.1f} {mine['p50_ms']:9.1f} | "
            f"{row['throughput_ratio']:9.2f} {row['p50_ratio']:9.2f}"
        )
    if out:
        out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
