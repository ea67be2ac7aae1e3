"""Dense retrieval at the library's speed: our FAISS retrievers against raw faiss + Documents built the ordinary way.

Both sides run in one process on one core (``faiss.omp_set_num_threads(1)``; torch is not imported) over the
SciFact corpus (5,183 passages read from ``/work/shared/data/scifact/corpus.jsonl``, never copied). Retrieval only:
the document embeddings are random unit vectors of dimension 384 (encoding the corpus is not what is measured),
and the 300 query vectors are given, as float32 arrays, to both sides.

- ours: ``FAISSEmbeddingRetriever.run(query_embedding=...)`` per query and ``FAISSBatchEmbeddingRetriever.run``
  for the 300 queries at once, over a ``FAISSDocumentStore`` (Flat, inner product): ``memory``, the store the
  documents were written to (every document decoded in memory), and ``saved``, that store saved to a temporary
  directory and opened again, which reads its hits' documents from the saved SQLite file and keeps the last ones
  decoded (the warm-up round reads them; the timed rounds find them kept, as a server's repeated queries do).
- raw: ``IndexFlatIP.search`` and, per hit, ``Document(id=..., content=..., meta=..., score=...)`` looked up from
  a plain list of the stored documents (what a user writing it by hand would do).

Single queries are paired: each query runs on both sides back to back (order alternating), every query in each
of ``--rounds`` rounds, and each side reports its median time per query. Batches of the 300 queries run in
interleaved rounds (ours, raw, raw, ours, ...) and each side reports its median. The printed ratio is raw time /
our time, i.e. our speed as a multiple of raw's (>= 1: ours is faster). Prints, never asserts.

    .venv/bin/python benchmarks/faiss_retrieval_speed.py [--rounds 21] [--top-k 10 100] [--stores memory saved]
"""

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np
from haystack import Document

from components.retrievers.faiss import FAISSBatchEmbeddingRetriever, FAISSEmbeddingRetriever
from components.stores.faiss.document_store import FAISSDocumentStore

SCIFACT = Path("/work/shared/data/scifact/corpus.jsonl")
DIM, QUERIES = 384, 300


def scifact_documents() -> list[Document]:
    """The SciFact passages as Documents (text as content, title in meta)."""
    with SCIFACT.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [Document(id=str(row["_id"]), content=row["text"], meta={"title": row["title"]}) for row in rows]


def unit_vectors(count: int, seed: int) -> np.ndarray:
    """``count`` random float32 unit vectors of dimension ``DIM``."""
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def raw_side(documents: list[Document], embeddings: np.ndarray) -> Callable[[np.ndarray, int], list[list[Document]]]:
    """Raw faiss over ``embeddings``; hits become Documents the ordinary way, from a plain list."""
    index = faiss.IndexFlatIP(DIM)
    index.add(embeddings)
    stored = [(d.id, d.content, d.meta) for d in documents]

    def search(queries: np.ndarray, top_k: int) -> list[list[Document]]:
        scores, rows = index.search(queries, top_k)
        found = []
        for hit_rows, hit_scores in zip(rows.tolist(), scores.tolist(), strict=True):
            hits = []
            for row, score in zip(hit_rows, hit_scores, strict=True):
                if row >= 0:
                    doc_id, content, meta = stored[row]
                    hits.append(Document(id=doc_id, content=content, meta=meta, score=score))
            found.append(hits)
        return found

    return search


def interleaved(rounds: int, ours: Callable[[], object], raw: Callable[[], object]) -> tuple[float, float]:
    """Median seconds of ``ours()`` and ``raw()`` over ``rounds`` rounds, order alternating; after a warm-up."""
    ours(), raw()
    times: dict[str, list[float]] = {"ours": [], "raw": []}
    for round_number in range(rounds):
        order = [("ours", ours), ("raw", raw)]
        for name, side in order if round_number % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            side()
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["ours"]), statistics.median(times["raw"])


def paired_singles(
    rounds: int, ours: Callable[[np.ndarray], object], raw: Callable[[np.ndarray], object], queries: np.ndarray
) -> tuple[float, float]:
    """
    Median seconds per query of ``ours(query)`` and ``raw(query)``, each query run by both sides back to back
    (order alternating), ``rounds`` times over all queries. Pairing per query keeps a burst of load from the
    machine's other jobs from landing on one side only.
    """
    times: dict[str, list[float]] = {"ours": [], "raw": []}
    sides = [("ours", ours), ("raw", raw)]
    for round_number in range(rounds + 1):  # round 0 warms up
        for position, query in enumerate(queries):
            for name, side in sides if (round_number + position) % 2 == 0 else sides[::-1]:
                start = time.perf_counter()
                side(query)
                elapsed = time.perf_counter() - start
                if round_number:
                    times[name].append(elapsed)
    return statistics.median(times["ours"]), statistics.median(times["raw"])


def compare(
    name: str,
    store: FAISSDocumentStore,
    raw: Callable[[np.ndarray, int], list[list[Document]]],
    queries: np.ndarray,
    top_k: int,
    rounds: int,
) -> None:
    """Print, at ``top_k``, single and batch: our (store NAME) and raw queries/s and our speed as a multiple of
    raw's."""
    single = FAISSEmbeddingRetriever(store, top_k=top_k)
    batch = FAISSBatchEmbeddingRetriever(store, top_k=top_k)
    ours_docs = batch.run(query_embeddings=queries)["documents"]
    same = [[d.id for d in hits] for hits in ours_docs] == [[d.id for d in hits] for hits in raw(queries, top_k)]
    print(f"{name} store, top_k {top_k}: same hits on both sides: {same}")
    ours_s, raw_s = paired_singles(
        rounds, lambda query: single.run(query_embedding=query), lambda query: raw(query[np.newaxis], top_k), queries
    )
    print(f"{name:>6} {top_k:>5} {'single':>6} {1 / ours_s:>10.0f} {1 / raw_s:>10.0f} {raw_s / ours_s:>7.2f}x")
    ours_s, raw_s = interleaved(rounds, lambda: batch.run(query_embeddings=queries), lambda: raw(queries, top_k))
    print(
        f"{name:>6} {top_k:>5} {'batch':>6} {QUERIES / ours_s:>10.0f} {QUERIES / raw_s:>10.0f} {raw_s / ours_s:>7.2f}x"
    )


def main() -> None:
    """Print, per store and top_k, single and batch: our and raw queries/s and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="timed rounds per side (default 21)")
    parser.add_argument("--top-k", type=int, nargs="+", default=[10, 100], help="top_k values (default 10 100)")
    parser.add_argument(
        "--stores", nargs="+", choices=["memory", "saved"], default=["memory", "saved"], help="our stores to time"
    )
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    documents = scifact_documents()
    embeddings = unit_vectors(len(documents), seed=0)
    queries = unit_vectors(QUERIES, seed=1)
    raw = raw_side(documents, embeddings)
    print(f"SciFact {len(documents)} documents, random unit embeddings (dim {DIM}), {QUERIES} queries, one core")
    with tempfile.TemporaryDirectory() as directory:
        memory = FAISSDocumentStore(embedding_dim=DIM)
        memory.write_embeddings(documents, embeddings)
        writer = FAISSDocumentStore(path=directory, autosave=False, embedding_dim=DIM)
        writer.write_embeddings(documents, embeddings)
        writer.save()
        stores = {"memory": memory, "saved": FAISSDocumentStore.load(directory)}
        print(f"{'store':>6} {'top_k':>5} {'mode':>6} {'ours q/s':>10} {'raw q/s':>10} {'ours/raw':>8}")
        for name in args.stores:
            for top_k in args.top_k:
                compare(name, stores[name], raw, queries, top_k, args.rounds)


if __name__ == "__main__":
    main()
