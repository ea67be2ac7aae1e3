"""Dense retrieval speed: our FAISS store + retrievers vs raw faiss ``IndexIDMap2(IndexFlatIP)``.

Both sides search the same random L2-normalised 384-d vectors in one process, top_k=10. Raw faiss gets
float32 query arrays and returns id/score arrays; ours gets queries as Python lists (what a pipeline
passes) and returns Haystack Documents with scores and meta, i.e. the documents are materialised.
Single queries are timed in pairs (ours and raw back to back on the same query, order alternating), and
each side reports its median time per query; the fixed cost is the median of the paired differences, which
stays meaningful while other jobs load the machine. Batches alternate ABBA and report medians.
Single queries run with one FAISS (OpenMP) thread on both sides: on a busy 2-core machine, handing a
1-query search to an OpenMP team costs 1-6 ms of spinning (measured), which would drown what is measured.
Batches use FAISS's default threads.

- small: SciFact size (5,183 documents, 300 queries); documents carry the SciFact passages when the data
  is present. The single-query row's note gives our fixed cost per query: ours minus raw, in µs.
- large: 100,000 vectors, 200 queries; target ours >= 0.9x raw faiss queries/s.

    .venv/bin/python benchmarks/bench_faiss.py [--size small|large]
"""

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np
from _timing import median_seconds_abba
from haystack import Document

from components.retrievers import FAISSBatchEmbeddingRetriever, FAISSEmbeddingRetriever
from components.stores import FAISSDocumentStore

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
SIZES = {"small": (5183, 300, 7), "large": (100_000, 200, 3)}  # documents, queries, timed rounds per side
DIM, TOP_K = 384, 10


def _documents(count: int) -> list[Document]:
    """SciFact passages as documents when available (realistic content and meta), else synthetic ones."""
    passages: list[tuple[str, str, str]] = []
    if SCIFACT.exists():
        with SCIFACT.open(encoding="utf-8") as lines:
            for line in lines:
                row = json.loads(line)
                passages.append((str(row["_id"]), row.get("title", ""), row.get("text", "")))
                if len(passages) == count:
                    break
    passages += [(f"synthetic-{i}", f"title {i}", f"passage {i} " * 150) for i in range(len(passages), count)]
    return [Document(id=doc_id, content=text, meta={"title": title}) for doc_id, title, text in passages]


def _unit_vectors(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _paired_seconds(rounds: int, ours: Callable[[int], object], peer: Callable[[int], object], count: int) -> tuple:
    """Per-query times of ``ours(i)`` and ``peer(i)`` run back to back, order alternating; after a warm-up."""
    ours(0), peer(0)
    times: dict[str, list[float]] = {"ours": [], "peer": []}
    for round_number in range(rounds):
        for i in range(count):
            pair = [("ours", ours), ("peer", peer)]
            for name, fn in pair if (i + round_number) % 2 == 0 else pair[::-1]:
                start = time.perf_counter()
                fn(i)
                times[name].append(time.perf_counter() - start)
    differences = [mine - theirs for mine, theirs in zip(times["ours"], times["peer"], strict=True)]
    return statistics.median(times["ours"]), statistics.median(times["peer"]), statistics.median(differences)


def _row(benchmark: str, queries: int, seconds: tuple[float, float], note: str) -> dict:
    ours, peer = queries / seconds[0], queries / seconds[1]
    return {"benchmark": benchmark, "ours": ours, "peer": peer, "unit": "queries/s", "ratio": ours / peer, "note": note}


def run(size: str = "small") -> list[dict]:
    """Time single and batch retrieval, ours vs raw faiss, on ``size`` ("small" or "large")."""
    count, query_count, rounds = SIZES[size]
    vectors, queries = _unit_vectors(count, seed=0), _unit_vectors(query_count, seed=1)
    query_lists = queries.tolist()

    raw = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
    raw.add_with_ids(vectors, np.arange(count, dtype=np.int64))
    documents = _documents(count)
    store = FAISSDocumentStore(embedding_dim=DIM)
    store.write_embeddings(documents, vectors)
    single, batch = FAISSEmbeddingRetriever(store, top_k=TOP_K), FAISSBatchEmbeddingRetriever(store, top_k=TOP_K)

    ours_first = single.run(query_embedding=query_lists[0])["documents"]
    raw_scores, raw_ids = raw.search(queries[:1], TOP_K)
    assert [doc.id for doc in ours_first] == [documents[i].id for i in raw_ids[0]], "both sides must find the same"
    assert np.allclose([doc.score for doc in ours_first], raw_scores[0], atol=1e-5)

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # see the module docstring: OpenMP hand-off would drown a 1-query search
    try:
        ours_single, raw_single, fixed = _paired_seconds(
            rounds,
            lambda i: single.run(query_embedding=query_lists[i]),
            lambda i: raw.search(queries[i : i + 1], TOP_K),
            query_count,
        )
    finally:
        faiss.omp_set_num_threads(threads)
    batch_times = median_seconds_abba(
        rounds, lambda: batch.run(query_embeddings=query_lists), lambda: raw.search(queries, TOP_K)
    )
    shape = f"{count:,} x {DIM}, top_k={TOP_K}"
    batch_extra_us = (batch_times[0] - batch_times[1]) / query_count * 1e6
    return [
        _row(
            f"FAISS single query ({shape})",
            1,
            (ours_single, raw_single),
            f"vs IndexIDMap2(IndexFlatIP); our fixed cost {fixed * 1e6:.1f} µs/query (median of paired ours - raw, "
            "documents materialised)",
        ),
        _row(
            f"FAISS batch of {query_count} queries ({shape})",
            query_count,
            batch_times,
            f"one FAISS call per batch on both sides; ours adds {batch_extra_us:.1f} µs/query",
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    for result in run(parser.parse_args().size):
        print(
            f"{result['benchmark']}: ours {result['ours']:,.0f} vs peer {result['peer']:,.0f} {result['unit']} "
            f"(x{result['ratio']:.2f}) - {result['note']}"
        )
