"""Dense retrieval at scale: Flat against HNSW, our FAISS store + retriever beside raw faiss, in one process.

Vectors are clustered unit vectors from ``synthetic_vectors.py`` (a ``.npy``, memory-mapped; queries are near
corpus points, never equal to one). Every document has an id and short content. For Flat and for each HNSW
(M, efConstruction) setting this measures:

- build: ours = ``FAISSDocumentStore.from_npy`` (documents into SQLite, vectors into FAISS, one bulk call) against
  raw = the same faiss index type filled with ``add``; and the growth of anonymous RSS (RssAnon) each leaves.
  The document load alone is the Flat row's ours - raw.
- single-query latency p50 / p99, top_k=10, one FAISS thread on both sides (an OpenMP hand-off costs ms on a busy
  2-core machine): ours = ``FAISSEmbeddingRetriever.run`` returning Documents, raw = ``index.search`` plus
  ``[documents[i] for i in ids]``. Queries alternate which side runs first.
- recall@10 of HNSW against exact search (raw Flat on the same queries) for each efSearch of the sweep.

HNSW rows sweep efSearch on the built graph (set on the faiss object, since a store takes efSearch at init); the
``choice`` row names the fastest setting (our p50) with recall@10 >= 0.95 under 5 ms: what ``needle index
--index-type hnsw`` should use for large corpora. With ``shared`` (the default at size large, where an HNSW build
of 1M x 384 takes many minutes on 2 cores) raw searches the very faiss graph our store built, so raw HNSW build
time and memory are not measured again.

    nice -n 5 .venv/bin/python benchmarks/bench_scale_dense.py [--size small|large] [--n N] [--[no-]shared]
        [--hnsw M:efConstruction,...] [--raw-only]

``--raw-only`` measures raw faiss alone (build, memory, recall, 1-thread latency) and needs only faiss and numpy,
for a bigger machine where our stack is not installed.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import faiss
import numpy as np
from synthetic_vectors import default_clusters, make_queries, write_corpus

if TYPE_CHECKING:  # imported when ours is measured: --raw-only runs where only faiss and numpy are installed
    from haystack import Document

    from components.stores import FAISSDocumentStore

DIM, TOP_K, CHUNK, TARGET_RECALL, TARGET_MS = 384, 10, 50_000, 0.95, 5.0
SIZES = {"small": (30_000, 200), "large": (1_000_000, 300)}  # corpus vectors, queries
FLAT_QUERIES = 50  # single queries timed on Flat (hundreds of ms each at 1M)
# (M, efConstruction). At 1M, M=16/efC=40 stays under recall@10 0.82 even at efSearch 256: not worth building.
HNSW = {"small": [(16, 40), (32, 40)], "large": [(32, 64), (32, 128)]}
EF_SEARCH = (16, 32, 64, 128, 256, 512)
Setting = tuple[float, int, int, int, float]  # our p50 ms, M, efConstruction, efSearch, recall@10


@dataclass
class Data:
    """The corpus file, its documents, the queries (array and lists) and their exact top-10 rows."""

    path: Path
    documents: Sequence[Document] | range
    queries: np.ndarray
    query_lists: list[list[float]]
    truth: np.ndarray | None = None


@dataclass
class Side:
    """One side's built index: build seconds, RSS growth, and a single-query search returning documents."""

    seconds: float
    rss_mb: float | None
    search: Callable[[int], list[Document]]


def rss_anon_mb() -> float:
    """Anonymous resident memory of this process in MB (file-backed pages of the mapped .npy excluded)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed_build(build: Callable[[], object]) -> tuple[object, float, float]:
    """Run BUILD; returns what it built, its seconds and the RSS it added (MB)."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand freed heap back first, or it hides the next build's growth
    before = rss_anon_mb()
    start = time.perf_counter()
    built = build()
    seconds = time.perf_counter() - start
    gc.collect()
    return built, seconds, rss_anon_mb() - before


def vectors_file(n: int) -> Path:
    """The benchmark's corpus .npy for N vectors, generated once under /tmp (seeded, so reusable)."""
    path = Path(f"/tmp/needle_bench_vectors_{n}x{DIM}.npy")
    if not path.exists():
        write_corpus(path, n, DIM, default_clusters(n), seed=0)
    return path


def our_store(data: Data, factory: str, params: dict[str, float] | None) -> tuple[FAISSDocumentStore, Side]:
    """Build our store from the .npy (bulk path) and wrap its retriever as a single-query search."""
    from components.retrievers import FAISSEmbeddingRetriever
    from components.stores import FAISSDocumentStore

    def build() -> FAISSDocumentStore:
        store = FAISSDocumentStore(
            embedding_dim=DIM, index_factory=factory, index_chunk_size=CHUNK, search_params=params
        )
        store.from_npy(data.documents, str(data.path))
        return store

    store, seconds, rss = timed_build(build)
    retriever = FAISSEmbeddingRetriever(document_store=store, top_k=TOP_K)
    return store, Side(seconds, rss, lambda i: retriever.run(query_embedding=data.query_lists[i])["documents"])


def raw_side(index: faiss.Index, data: Data, seconds: float, rss: float | None) -> Side:
    """Raw faiss: search one query, then look its documents up in a Python list."""

    def search(i: int) -> list[Document]:
        _, ids = index.search(data.queries[i : i + 1], TOP_K)
        return [data.documents[j] for j in ids[0] if j >= 0]

    return Side(seconds, rss, search)


def raw_build(data: Data, make: Callable[[], faiss.Index]) -> tuple[faiss.Index, Side]:
    """Build a raw faiss index from the .npy, CHUNK rows per add (as our store does)."""
    matrix = np.load(data.path, mmap_mode="r")

    def build() -> faiss.Index:
        index = make()
        for start in range(0, len(matrix), CHUNK):
            index.add(np.ascontiguousarray(matrix[start : start + CHUNK]))
        return index

    index, seconds, rss = timed_build(build)
    return index, raw_side(index, data, seconds, rss)


def latencies(ours: Side, raw: Side, count: int) -> tuple[list[float], list[float]]:
    """Per-query seconds of each side over COUNT queries, back to back, first side alternating."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    times: dict[str, list[float]] = {"ours": [], "raw": []}
    try:
        ours.search(0), raw.search(0)
        for i in range(count):
            pair = [("ours", ours), ("raw", raw)]
            for name, side in pair if i % 2 == 0 else pair[::-1]:
                start = time.perf_counter()
                side.search(i)
                times[name].append(time.perf_counter() - start)
    finally:
        faiss.omp_set_num_threads(threads)
    return times["ours"], times["raw"]


def p99(values: list[float]) -> float:
    return float(np.percentile(values, 99))


def recall_at_10(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of the exact top-10 that FOUND holds."""
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found.tolist(), truth.tolist(), strict=True)]))


def row(benchmark: str, ours: float | None, peer: float | None, unit: str, note: str) -> dict[str, Any]:
    ratio = ours / peer if ours is not None and peer else None
    return {"benchmark": benchmark, "ours": ours, "peer": peer, "unit": unit, "ratio": ratio, "note": note}


def build_rows(label: str, ours: Side, raw: Side | None) -> list[dict[str, Any]]:
    """Build time and memory rows of one index type."""
    return [
        row(f"{label} build", ours.seconds, raw.seconds if raw else None, "s", "ours: from_npy (documents + vectors)"),
        row(f"{label} memory", ours.rss_mb, raw.rss_mb if raw else None, "MB RSS", "growth of RssAnon"),
    ]


def latency_rows(label: str, ours: Side, raw: Side, count: int, note: str) -> tuple[list[dict[str, Any]], float]:
    """p50 and p99 single-query rows; returns them and our p50 in ms."""
    mine, theirs = latencies(ours, raw, count)
    p50 = statistics.median(mine) * 1e3
    rows = [
        row(f"{label} query p50", p50, statistics.median(theirs) * 1e3, "ms", note),
        row(f"{label} query p99", p99(mine) * 1e3, p99(theirs) * 1e3, "ms", note),
    ]
    for found in rows:
        progress(f"{found['benchmark']}: ours {found['ours']:.3f} raw {found['peer']:.3f} ms ({note})")
    return rows, p50


def hnsw_rows(data: Data, m: int, ef_c: int, shared: bool) -> tuple[list[dict[str, Any]], list[Setting]]:
    """Build rows, then recall and latency per efSearch, of HNSW(M, efConstruction); plus the qualifying settings."""
    label = f"HNSW{m} efC={ef_c}"
    store, ours = our_store(data, f"HNSW{m}", {"efConstruction": ef_c, "efSearch": 64})
    graph = faiss.downcast_index(store._vectors._index.index)  # type: ignore[union-attr]  # benchmark only
    if shared:
        raw_index, raw = graph, raw_side(graph, data, float("nan"), None)
    else:

        def make() -> faiss.Index:
            index = faiss.IndexHNSWFlat(DIM, m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_c
            return index

        raw_index, raw = raw_build(data, make)
    progress(f"{label}: built, ours {ours.seconds:.0f} s {ours.rss_mb:.0f} MB, raw {raw.seconds:.0f} s {raw.rss_mb} MB")
    rows = build_rows(label, ours, None if shared else raw)
    qualifying = []
    for ef in EF_SEARCH:
        graph.hnsw.efSearch = raw_index.hnsw.efSearch = ef
        recall = recall_at_10(raw_index.search(data.queries, TOP_K)[1], data.truth)
        if shared:
            for i in range(5):
                expected = [data.documents[j].id for j in raw_index.search(data.queries[i : i + 1], TOP_K)[1][0]]
                assert [d.id for d in ours.search(i)] == expected, "ours and raw search the same graph"
        lat, p50 = latency_rows(f"{label} efSearch={ef}", ours, raw, len(data.queries), f"recall@10 {recall:.3f}")
        rows += [row(f"{label} efSearch={ef} recall@10", recall, None, "recall", "vs exact Flat"), *lat]
        progress(f"{label} efSearch={ef}: recall@10 {recall:.3f}, our p50 {p50:.2f} ms")
        if recall >= TARGET_RECALL and p50 < TARGET_MS:
            qualifying.append((p50, m, ef_c, ef, recall))
    return rows, qualifying


def progress(message: str) -> None:
    """A line on stderr, so long runs show where they are."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def choice_row(qualifying: list[Setting]) -> dict[str, Any]:
    """The fastest HNSW setting (our p50) that reached the recall target under the latency target."""
    if not qualifying:
        return row("HNSW choice", None, None, "ms", f"none reached recall@10 >= {TARGET_RECALL} under {TARGET_MS} ms")
    p50, m, ef_c, ef, recall = min(qualifying)
    note = f"M={m} efConstruction={ef_c} efSearch={ef}: recall@10 {recall:.3f}, our p50 {p50:.2f} ms"
    return row("HNSW choice", p50, None, "ms", note)


def run(
    size: str = "small", n: int | None = None, shared: bool | None = None, configs: list[tuple[int, int]] | None = None
) -> list[dict[str, Any]]:
    """Flat and HNSW at SIZE ("small": 30k, "large": 1M vectors; N overrides the count)."""
    count, query_count = SIZES[size]
    count = n or count
    shared = size == "large" if shared is None else shared
    queries = make_queries(query_count, DIM, default_clusters(count), seed=0)
    from haystack import Document

    documents = [Document(id=f"v{i}", content=f"passage {i}") for i in range(count)]
    data = Data(vectors_file(count), documents, queries, queries.tolist())
    _, flat = our_store(data, "Flat", None)
    raw_flat, raw = raw_build(data, lambda: faiss.IndexFlatIP(DIM))
    data.truth = raw_flat.search(queries, TOP_K)[1]
    progress(f"Flat: built, ours {flat.seconds:.0f} s {flat.rss_mb:.0f} MB, raw {raw.seconds:.1f} s {raw.rss_mb} MB")
    shape = f"Flat {count:,} x {DIM}"
    rows = build_rows(shape, flat, raw) + latency_rows(shape, flat, raw, min(query_count, FLAT_QUERIES), "exact")[0]
    del flat, raw, raw_flat
    qualifying: list[Setting] = []
    for m, ef_c in configs or HNSW[size]:
        gc.collect()
        found, ok = hnsw_rows(data, m, ef_c, shared)
        rows += found
        qualifying += ok
    return [*rows, choice_row(qualifying)]


def raw_only(size: str, n: int | None, configs: list[tuple[int, int]] | None = None) -> None:
    """Raw faiss alone (no store, no documents): HNSW build, memory, recall@10 and single-query latency at SIZE.

    For a machine that has faiss and numpy but not our stack; it prints progress lines only.
    """
    count = n or SIZES[size][0]
    queries = make_queries(SIZES[size][1], DIM, default_clusters(count), seed=0)
    data = Data(vectors_file(count), range(count), queries, [])  # row numbers stand in for documents
    flat, side = raw_build(data, lambda: faiss.IndexFlatIP(DIM))
    progress(f"raw Flat {count:,}: built {side.seconds:.1f} s, {side.rss_mb:.0f} MB")
    truth = flat.search(queries, TOP_K)[1]
    del flat
    for m, ef_c in configs or HNSW[size]:

        def make(m: int = m, ef_c: int = ef_c) -> faiss.Index:
            index = faiss.IndexHNSWFlat(DIM, m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_c
            return index

        index, side = raw_build(data, make)
        progress(f"raw HNSW{m} efC={ef_c}: built {side.seconds:.1f} s with {faiss.omp_get_max_threads()} threads, "
                 f"{side.rss_mb:.0f} MB")  # fmt: skip
        for ef in EF_SEARCH:
            index.hnsw.efSearch = ef
            recall = recall_at_10(index.search(queries, TOP_K)[1], truth)
            times, _ = latencies(side, side, len(queries))
            p50, slow = statistics.median(times) * 1e3, p99(times) * 1e3
            progress(
                f"raw HNSW{m} efC={ef_c} efSearch={ef}: recall@10 {recall:.3f}, p50 {p50:.3f} ms, p99 {slow:.3f} ms"
            )
        del index


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--n", type=int, help="corpus vectors (default: 30,000 small, 1,000,000 large)")
    parser.add_argument("--shared", action=argparse.BooleanOptionalAction, help="raw searches our HNSW graph")
    parser.add_argument("--raw-only", action="store_true", help="raw faiss HNSW only (needs faiss and numpy alone)")
    parser.add_argument("--hnsw", help="HNSW settings to build, M:efConstruction,... (default: the size's)")
    arguments = parser.parse_args()
    settings = (
        [(int(m), int(ef)) for m, ef in (pair.split(":") for pair in arguments.hnsw.split(","))]
        if arguments.hnsw
        else None
    )
    if arguments.raw_only:
        raw_only(arguments.size, arguments.n, settings)
        sys.exit(0)
    for result in run(arguments.size, arguments.n, arguments.shared, settings):
        ratio = f"x{result['ratio']:.2f}" if result["ratio"] is not None else "-"
        peer = f"{result['peer']:,.3f}" if result["peer"] is not None else "-"
        ours = f"{result['ours']:,.3f}" if result["ours"] is not None else "-"
        print(
            f"{result['benchmark']}: ours {ours} vs raw {peer} {result['unit']} ({ratio}) - {result['note']}",
            flush=True,
        )
