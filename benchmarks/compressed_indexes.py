"""Every ``needle index --index-type`` side by side: build time, index bytes, peak RSS, recall@10, queries/s.

Vectors are clustered unit vectors from ``synthetic_vectors.py`` (100k x 384 by default, ``--size 1m`` for a
million), written once to a memory-mapped ``.npy``; queries are drawn like the corpus. Each index type is built
and searched in a process of its own (so its peak RSS is its own) the way the FAISS store does it: the type's
factory string and search parameters (``DenseIndexType.fitted``, sized as ``needle index`` sizes it), trained on
the first chunk of ``CHUNK`` vectors (the training sample of a streamed build), then filled chunk by chunk.

- build: train + add, seconds.
- index bytes: the size of the saved ``vectors.faiss``.
- peak RSS: the process's maximum resident set, the memory-mapped corpus pages it read included (the same
  for every type), so the differences between rows are the indexes' (build temporaries included).
- anon RSS: the process's anonymous resident memory once it has searched (``RssAnon``: the index, Python and
  faiss, not the corpus's mapped pages): what a search process holds.
- recall@10: overlap of the top 10 with exact search (Flat), averaged over the queries.
- queries/s: single queries, one after another (a server's pattern).
- IVF types are searched again at each ``--nprobe`` (default 32 and 64) on the same built index: recall bought
  with speed, no rebuild, as ``needle search --nprobe`` does.

Everything runs on one FAISS thread: on a busy 2-core machine OpenMP's hand-offs cost more than they save
(PQ training measured 3.6x slower on 2 threads than on 1 under load).

The table prints each figure and its ratio to flat::

    nice -n 5 .venv/bin/python benchmarks/compressed_indexes.py [--size 100k|1m] [--types flat,sq8,...] [--nprobe 32,64]
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


def measure(kind: str, data: Path, nprobes: list[int]) -> dict[str, Any]:
    """Build KIND over DATA/corpus.npy as the FAISS store does, then time and score its searches (an IVF type's
    again at each of NPROBES)."""
    corpus = np.load(data / "corpus.npy", mmap_mode="r")
    queries = np.load(data / "queries.npy")
    exact = np.load(data / "exact.npy")
    faiss.omp_set_num_threads(1)
    choice = DenseIndexType(kind).fitted(len(corpus), CHUNK)
    start = time.perf_counter()
    index = build_faiss_index(DIM, "inner_product", choice.factory(), choice.search_params())
    vectors = FAISSVectorIndex(index, "inner_product", CHUNK, False, np.empty(0))
    vectors.train(np.asarray(corpus[:CHUNK]))
    for first in range(0, len(corpus), CHUNK):
        block = np.asarray(corpus[first : first + CHUNK])
        vectors.add(np.arange(first, first + len(block), dtype=np.int64), block)
    build = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        vectors.write(Path(folder))
        size = (Path(folder) / "vectors.faiss").stat().st_size
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row: dict[str, Any] = {"build_s": build, "bytes": size, "peak_rss": peak, "factory": choice.factory(),
           "params": json.dumps(choice.search_params())}  # fmt: skip
    row |= searched(vectors, queries, exact)
    row["anon_rss"] = anon_rss()
    if faiss.try_extract_index_ivf(index) is not None:  # nprobe is read at search time: no rebuild, as --nprobe
        row["sweep"] = {}
        for nprobe in nprobes:
            faiss.ParameterSpace().set_index_parameter(index, "nprobe", nprobe)
            row["sweep"][nprobe] = searched(vectors, queries, exact)
    return row


def anon_rss() -> int:
    """This process's anonymous resident bytes now (RssAnon): the index, Python and faiss, without the pages of the
    memory-mapped corpus, which the kernel can drop."""
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("RssAnon:")).split()[1]) * 1024


def searched(vectors: FAISSVectorIndex, queries: np.ndarray, exact: np.ndarray) -> dict[str, float]:
    """Recall@10 against EXACT and single queries per second of VECTORS over QUERIES (after 10 untimed)."""
    vectors.search(queries[:10], TOP_K, None)  # warm caches before timing
    start = time.perf_counter()
    found = np.vstack([vectors.search(query[None, :], TOP_K, None)[1] for query in queries])
    seconds = time.perf_counter() - start
    recall = np.mean([len(set(f) & set(e)) / TOP_K for f, e in zip(found.tolist(), exact.tolist(), strict=True)])
    return {"recall": float(recall), "qps": len(queries) / seconds}


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
    rows_after: list[tuple[str, str, dict[str, Any]]] = []
    lines = [
        "| type | FAISS factory / search | build s | index MB | peak RSS MB | anon RSS MB | recall@10 | queries/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, row in rows.items():
        params = json.loads(str(row["params"])) or {}
        setting = " ".join(f"{k}={v}" for k, v in params.items() if k != "efConstruction")
        for nprobe, found in row.get("sweep", {}).items():
            if int(nprobe) != params.get("nprobe"):
                rows_after.append((f"{kind}", f"`{row['factory']}` nprobe={nprobe}", row | found))
        lines.append(
            f"| {kind} | `{row['factory']}` {setting} | {row['build_s']:.1f} ({row['build_s'] / base['build_s']:.2f}x)"
            f" | {row['bytes'] / 2**20:.0f} ({row['bytes'] / base['bytes']:.2f}x)"
            f" | {row['peak_rss'] / 2**20:.0f} ({row['peak_rss'] / base['peak_rss']:.2f}x)"
            f" | {row['anon_rss'] / 2**20:.0f} ({row['anon_rss'] / base['anon_rss']:.2f}x)"
            f" | {row['recall']:.3f} | {row['qps']:.0f} ({row['qps'] / base['qps']:.1f}x) |"
        )
    for kind, setting, row in rows_after:  # the same built index searched at another nprobe: recall and speed only
        lines.append(f"| {kind} | {setting} | same | same | same | same | {row['recall']:.3f}"
                     f" | {row['qps']:.0f} ({row['qps'] / base['qps']:.1f}x) |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    """Command line: prepare the data once, measure each type in its own process, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="100k", help="corpus size (1m: the sizing run, minutes)")
    parser.add_argument("--types", default=",".join(INDEX_TYPES), help="comma-separated index types (with flat)")
    parser.add_argument("--nprobe", default="32,64", help="IVF types: also search at these nprobe (no rebuild)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one type in this process
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)  # internal: write the data
    args = parser.parse_args()
    n, queries = SIZES[args.size]
    if args.prepare:
        prepare(args.data, n, queries)
        return
    if args.one:
        print(json.dumps(measure(args.one, args.data, [int(p) for p in args.nprobe.split(",") if p])))
        return
    kinds = ["flat", *(kind for kind in args.types.split(",") if kind != "flat")]
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        # in a process of its own: an exec'd child's ru_maxrss starts at its parent's RSS when it forked, so the
        # parent must stay small for each type's peak to be its own
        subprocess.run([sys.executable, __file__, "--prepare", "--size", args.size, "--data", folder], check=True)
        for kind in kinds:
            command = [sys.executable, __file__, "--one", kind, "--data", folder, "--nprobe", args.nprobe]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            rows[kind] = json.loads(output.strip().splitlines()[-1])
            print(f"{kind}: {rows[kind]}", file=sys.stderr, flush=True)
    print(f"{n:,} x {DIM} clustered unit vectors, {queries:,} single queries, top {TOP_K}, one FAISS"
          " thread; ratios to flat in brackets")  # fmt: skip
    print(table(rows))


if __name__ == "__main__":
    main()
