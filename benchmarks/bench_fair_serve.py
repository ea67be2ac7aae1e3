"""How long a one-query request waits on `needle serve` while heavy ``POST /search`` batches keep its pool busy.

    python benchmarks/bench_fair_serve.py [--index DIR] [--batches 4] [--batch-queries 500] [--rounds 2]
        [--probe-route bm25_search] [--queries FILE] [--json OUT]

Starts `needle serve` on the index (without ``--index``: ``samples/python_docs.jsonl`` built with dense and BM25
parts in a temporary directory, so ``/search`` runs the hybrid batch pipeline), times a few one-query probes on the
idle server, then has ``--batches`` clients each send ``--rounds`` ``/search`` batches of ``--batch-queries``
queries, one after the other, and meanwhile times one-query ``POST /<probe-route>/run`` requests, one every half
second after the last answer. Prints the probes' median and worst latency, idle and under load, and the batches'
throughput (queries answered per second of the loaded period). Queries are the ``text`` of the BEIR
queries file (default SciFact's, when present), else sentences of the sample, cycled to fill a batch.
"""

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import SAMPLE, build_index, free_port, queries_from_sample, start_server

SCIFACT_QUERIES = Path("/work/shared/data/scifact/queries.jsonl")


def load_queries(path: Path | None) -> list[str]:
    """The ``text`` of each line of a BEIR queries file, or sentences of the sample when there is none."""
    if path is None or not path.exists():
        return queries_from_sample(200)
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines if line.strip()]


def probe(client: httpx.Client, route: str, query: str) -> float:
    """Seconds one one-query request takes to answer 200."""
    started = time.monotonic()
    answer = client.post(f"/{route}/run", json={"query": query, "top_k": 10})
    answer.raise_for_status()
    return time.monotonic() - started


def heavy_client(base: str, batch: list[str], rounds: int, answered: list[int]) -> None:
    """Send BATCH to /search ROUNDS times, one after the other; count the queries answered."""
    with httpx.Client(base_url=base, timeout=600) as client:
        for _ in range(rounds):
            client.post("/search", json={"query_list": batch, "top_k": 10}).raise_for_status()
            answered.append(len(batch))


def measure(base: str, args: argparse.Namespace, queries: list[str]) -> dict[str, float]:
    """Probe latencies idle and under load (seconds), and the batches' throughput under load."""
    batch = [queries[i % len(queries)] for i in range(args.batch_queries)]
    with httpx.Client(base_url=base, timeout=600) as client:
        client.post("/search", json={"query_list": batch[:8], "top_k": 10}).raise_for_status()  # warm
        idle = [probe(client, args.probe_route, queries[i % len(queries)]) for i in range(5)]
        answered: list[int] = []
        clients = [
            threading.Thread(target=heavy_client, args=(base, batch, args.rounds, answered))
            for _ in range(args.batches)
        ]
        started = time.monotonic()
        for thread in clients:
            thread.start()
        time.sleep(1.0)  # every batch client has a request in the pool
        loaded: list[float] = []
        while any(thread.is_alive() for thread in clients):
            loaded.append(probe(client, args.probe_route, queries[(7 * len(loaded)) % len(queries)]))
            time.sleep(0.5)
        elapsed = time.monotonic() - started
        for thread in clients:
            thread.join()
    return {
        "idle_p50_s": statistics.median(idle),
        "loaded_p50_s": statistics.median(loaded),
        "loaded_max_s": max(loaded),
        "probes": len(loaded),
        "batch_queries_per_s": sum(answered) / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--batch-queries", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--probe-route", default="bm25_search")
    parser.add_argument("--queries", type=Path, default=SCIFACT_QUERIES)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        index = args.index
        if index is None:
            index = Path(tmp) / "index"
            print(f"building {SAMPLE.name} (dense + bm25) ...", flush=True)
            build_index(index)
        port = free_port()
        server = start_server(index, port, Path(tmp) / "server.log")
        try:
            result = measure(f"http://127.0.0.1:{port}", args, load_queries(args.queries))
        finally:
            server.terminate()
            server.wait(timeout=60)
    print(
        f"{args.batches} clients x /search batches of {args.batch_queries}, one-query /{args.probe_route}/run probes: "
        f"idle p50 {result['idle_p50_s']:.3f} s; under load p50 {result['loaded_p50_s']:.3f} s, "
        f"max {result['loaded_max_s']:.3f} s ({result['probes']:.0f} probes); "
        f"batches {result['batch_queries_per_s']:.0f} queries/s"
    )
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, **result}, indent=2))


if __name__ == "__main__":
    main()
