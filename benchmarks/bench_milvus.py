"""Milvus Lite vs our FAISS store on the same vectors: build time, queries/s single and batch, recall@10.

Both stores get the same random L2-normalised 384-d vectors and the same documents (SciFact passages when the
data is present), inner product, top_k=10, through our components in one process: ``MilvusDocumentStore``
(Milvus Lite, AUTOINDEX, flushed after loading) and ``FAISSDocumentStore`` (Flat, exact). "ours" is Milvus Lite,
"peer" our FAISS store, so a ratio below 1 means Milvus Lite is slower. Recall@10 is measured against exact
numpy search; single queries alternate between the two stores, batches alternate ABBA.

- small: SciFact size (5,183 documents, 300 queries)
- large: 100,000 documents, 200 queries

    .venv/bin/python benchmarks/bench_milvus.py [--size small|large]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import median_seconds_abba
from bench_faiss import _documents, _unit_vectors
from haystack import Document

from components.stores import FAISSDocumentStore
from components.stores.milvus.document_store import MilvusDocumentStore

SIZES = {"small": (5183, 300, 3), "large": (100_000, 200, 2)}  # documents, queries, timed rounds per side
TOP_K = 10
WIDE_EF = 256  # HNSW search breadth of the second Milvus run (Lite's AUTOINDEX default is 64)


def _build(store: MilvusDocumentStore | FAISSDocumentStore, documents: list[Document]) -> float:
    """Seconds writing ``documents`` into the (empty) store took; Milvus: connection and flush included."""
    start = time.perf_counter()
    store.write_documents(documents)
    if isinstance(store, MilvusDocumentStore):
        store.flush()
    return time.perf_counter() - start


def _recall(results: list[list[Document]], exact: np.ndarray, ids: list[str]) -> float:
    """Mean fraction of each query's exact top-10 ids that the store returned."""
    hits = [
        len({d.id for d in found} & {ids[j] for j in truth}) / TOP_K
        for found, truth in zip(results, exact, strict=True)
    ]
    return float(statistics.mean(hits))


def _single_seconds(rounds: int, milvus: MilvusDocumentStore, faiss_store: FAISSDocumentStore, queries: np.ndarray):
    """Median seconds per single query of each store, the two alternating query by query."""
    as_lists = queries.tolist()
    times: dict[str, list[float]] = {"milvus": [], "faiss": []}
    calls = {
        "milvus": lambda q: milvus.embedding_search([as_lists[q]], TOP_K),
        "faiss": lambda q: faiss_store.search(queries[q : q + 1], TOP_K),
    }
    for round_number in range(rounds):
        for q in range(len(as_lists)):
            order = ["milvus", "faiss"] if (q + round_number) % 2 == 0 else ["faiss", "milvus"]
            for name in order:
                start = time.perf_counter()
                calls[name](q)
                times[name].append(time.perf_counter() - start)
    return statistics.median(times["milvus"]), statistics.median(times["faiss"])


def run(size: str = "small") -> list[dict]:
    """Build both stores on ``size`` and time them; rows in benchmarks/run.py's shape."""
    count, query_count, rounds = SIZES[size]
    vectors, queries = _unit_vectors(count, seed=0), _unit_vectors(query_count, seed=1)
    documents = [
        Document(id=d.id, content=d.content, meta=d.meta, embedding=v.tolist())
        for d, v in zip(_documents(count), vectors, strict=True)
    ]
    ids = [d.id for d in documents]
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :TOP_K]
    with tempfile.TemporaryDirectory() as scratch:
        milvus, faiss_store = MilvusDocumentStore(uri=str(Path(scratch) / "m.db")), FAISSDocumentStore()
        milvus_build, faiss_build = _build(milvus, documents), _build(faiss_store, documents)
        batch = queries.tolist()
        milvus_results = milvus.embedding_search(batch, TOP_K)
        faiss_results = faiss_store.search(queries, TOP_K)
        single = _single_seconds(1, milvus, faiss_store, queries)
        batched = median_seconds_abba(
            rounds, lambda: milvus.embedding_search(batch, TOP_K), lambda: faiss_store.search(queries, TOP_K)
        )
        wide = MilvusDocumentStore(uri=milvus.settings.uri, search_params={"params": {"ef": WIDE_EF}})
        wide_results = wide.embedding_search(batch, TOP_K)
        wide_batched = median_seconds_abba(
            rounds, lambda: wide.embedding_search(batch, TOP_K), lambda: faiss_store.search(queries, TOP_K)
        )
        milvus.close()
    note = f"{count:,} docs, {query_count} queries, 384-d, IP, top_k {TOP_K}; ours = Milvus Lite, peer = FAISS store"
    return [
        _rate("build (write + flush)", count, (milvus_build, faiss_build), "documents/s", note),
        _rate("single query", 1, single, "queries/s", note),
        _rate(f"batch of {query_count}", query_count, batched, "queries/s", note),
        {
            "benchmark": "recall@10 vs exact search",
            "ours": _recall(milvus_results, exact, ids),
            "peer": _recall(faiss_results, exact, ids),
            "unit": "recall",
            "note": "AUTOINDEX on Milvus Lite (FAISS HNSW, ef 64); FAISS Flat is exact",
        },
        _rate(f"batch of {query_count}, ef {WIDE_EF}", query_count, wide_batched, "queries/s", note),
        {
            "benchmark": f"recall@10, ef {WIDE_EF}",
            "ours": _recall(wide_results, exact, ids),
            "peer": _recall(faiss_results, exact, ids),
            "unit": "recall",
            "note": f'search_params={{"params": {{"ef": {WIDE_EF}}}}}',
        },
    ]


def _rate(benchmark: str, items: int, seconds: tuple[float, float], unit: str, note: str) -> dict:
    ours, peer = items / seconds[0], items / seconds[1]
    return {"benchmark": benchmark, "ours": ours, "peer": peer, "unit": unit, "ratio": ours / peer, "note": note}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    for row in run(parser.parse_args().size):
        ratio = row["ours"] / row["peer"] if row["peer"] else float("nan")
        print(
            f"{row['benchmark']:<28} milvus-lite {row['ours']:>10.3f}  faiss {row['peer']:>10.3f}  "
            f"{row['unit']:<12} ratio {ratio:.3f}"
        )


if __name__ == "__main__":
    main()
