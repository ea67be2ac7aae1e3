"""Every ``needle index --index-type`` side by side: build time, index bytes, peak RSS, recall@10, queries/s.

Vectors are clustered unit vectors from ``synthetic_vectors.py`` (100k x 384 by default, ``--size 1m`` for a
million), written once to a memory-mapped ``.npy``; queries are drawn like the corpus. Each index type is built
and searched in a process of its own (so its peak RSS is its own) the way the FAISS store does it: the type's
factory string and search parameters (``DenseIndexType.fitted``, sized as ``needle index`` sizes it), trained on
the first chunk of ``CHUNK`` vectors (the training sample of a streamed build), then filled chunk by chunk.

- build: train + add, seconds.
- index bytes: the size of the saved ``vectors.faiss``.
- peak RSS: the process's maximum resident set, the memory-mapped corpus pages it read included (the same
  for every type), so the differences between rows are the indexes'.
- recall@10: overlap of the top 10 with exact search (Flat), averaged over the queries.
- queries/s: single queries, one after another (a server's pattern).

Everything runs on one FAISS thread: on a busy 2-core machine OpenMP's hand-offs cost more than they save
(PQ training measured 3.6x slower on 2 threads than on 1 under load).

The table prints each figure and its ratio to flat::

    nice -n 5 .venv/bin/python benchmarks/compressed_indexes.py [--size 100k|1m] [--types flat,sq8,...]
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from synthetic_vectors import default_clusters, make_queries, write_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere in the checkout

from components.stores.faiss.vector_index import FAISSVectorIndex, build_faiss_index
from needle_retrieval.index.dense_type import INDEX_TYPES, DenseIndexType

DIM, TOP_K, CHUNK, SEED = 384, 10, 10_240, 0  # CHUNK: needle index's default chunk, aligned to encode batches
SIZES = {"100k": (100_000, 1_000), "1m": (1_000_000, 1_000)}  # corpus vectors, queries


def measure(kind: str, data: Path) -> dict[str, Any]:
    """Build KIND over DATA/corpus.npy as the FAISS store does, then time and score its searches."""
    corpus = np.load(data / "corpus.npy", mmap_mode="r")
    queries = np.load(data / "queries.npy")
    exact = np.load(data / "exact.npy")
    faiss.omp_set_num_threads(1)
    choice = DenseIndexType(kind).fitted(len(corpus), CHUNK)
    start = time.perf_counter()
    vectors = FAISSVectorIndex(
        build_faiss_index(DIM, "inner_product", choice.factory(), choice.search_params()),
        "inner_product", CHUNK, False, np.empty(0),
    )  # fmt: skip
    vectors.train(np.asarray(corpus[:CHUNK]))
    for first in range(0, len(corpus), CHUNK):
        block = np.asarray(corpus[first : first + CHUNK])
        vectors.add(np.arange(first, first + len(block), dtype=np.int64), block)
    build = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        vectors.write(Path(folder))
        size = (Path(folder) / "vectors.faiss").stat().st_size
    vectors.search(queries[:10], TOP_K, None)  # warm caches before timing
    start = time.perf_counter()
    found = np.vstack([vectors.search(query[None, :], TOP_K, None)[1] for query in queries])
    seconds = time.perf_counter() - start
    recall = np.mean([len(set(f) & set(e)) / TOP_K for f, e in zip(found.tolist(), exact.tolist(), strict=True)])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"build_s": build, "bytes": size, "peak_rss": peak, "recall": float(recall), "qps": len(queries) / seconds,
            "factory": choice.factory(), "params": json.dumps(choice.search_params())}  # fmt: skip


def prepare(data: Path, n: int, queries: int) -> None:
    """Write the corpus, the queries and their exact top 10 (Flat) into DATA."""
    clusters = default_clusters(n)
    write_corpus(data / "corpus.npy", n, DIM, clusters, SEED)
    asked = make_queries(queries, DIM, clusters, SEED)
    np.save(data / "queries.npy", asked)
    flat = faiss.IndexFlatIP(DIM)
    corpus = np.load(data / "corpus.npy", mmap_mode="r")
    for first in range(0, n, CHUNK):
        flat.add(np.asarray(corpus[first : first + CHUNK]))
    np.save(data / "exact.npy", flat.search(asked, TOP_K)[1])


def table(rows: dict[str, dict[str, Any]]) -> str:
    """A Markdown table: each figure and its ratio to flat's (flat must be among the rows)."""
    base = rows["flat"]
    lines = [
        "| type | FAISS factory / search | build s | index MB | peak RSS MB | recall@10 | queries/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, row in rows.items():
        params = json.loads(str(row["params"])) or {}
        setting = " ".join(f"{k}={v}" for k, v in params.items() if k != "efConstruction")
        lines.append(
            f"| {kind} | `{row['factory']}` {setting} | {row['build_s']:.1f} ({row['build_s'] / base['build_s']:.2f}x)"
            f" | {row['bytes'] / 2**20:.0f} ({row['bytes'] / base['bytes']:.2f}x)"
            f" | {row['peak_rss'] / 2**20:.0f} ({row['peak_rss'] / base['peak_rss']:.2f}x)"
            f" | {row['recall']:.3f} | {row['qps']:.0f} ({row['qps'] / base['qps']:.1f}x) |"
        )
    return "\n".join(lines)


def main() -> None:
    """Command line: prepare the data once, measure each type in its own process, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="100k", help="corpus size (1m: the sizing run, minutes)")
    parser.add_argument("--types", default=",".join(INDEX_TYPES), help="comma-separated index types (with flat)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one type in this process
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.data)))
        return
    kinds = ["flat", *(kind for kind in args.types.split(",") if kind != "flat")]
    n, queries = SIZES[args.size]
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        prepare(Path(folder), n, queries)
        for kind in kinds:
            command = [sys.executable, __file__, "--one", kind, "--data", folder]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            rows[kind] = json.loads(output.strip().splitlines()[-1])
            print(f"{kind}: {rows[kind]}", file=sys.stderr, flush=True)
    print(f"{n:,} x {DIM} clustered unit vectors, {queries:,} single queries, top {TOP_K}, one FAISS"
          " thread; ratios to flat in brackets")  # fmt: skip
    print(table(rows))


if __name__ == "__main__":
    main()
