"""Memory of a process searching a saved FAISS store, against raw faiss reading documents from the same SQLite file.

Issue 34, item 1: a store opened for search holds the vector index and reads its hits' documents from its saved
``documents.sqlite`` (keeping the last ones decoded), where it used to decode every document into memory (4.2 GB
against raw's 1.5 GB at 1M passages). Each side runs in a fresh process of its own and prints its peak resident
memory (``ru_maxrss``) after answering the same queries one at a time:

- ours: ``FAISSDocumentStore.load(STORE)`` and ``search(query, top_k)`` per query (new Documents with scores);
- raw: ``faiss.read_index`` of the same generation's ``vectors.faiss``, the same ``documents.sqlite`` opened
  read-only, and per query ``index.search`` then the hits' rows read in one ``IN (...)`` query and turned into
  Documents with ``Document.from_dict`` (what a user writing it by hand would do).

The store is built first when STORE does not exist yet, in a process of its own, from a JSONL corpus
(``benchmarks/synthetic_corpus.py``) and a float32 ``.npy`` of its vectors (``benchmarks/synthetic_vectors.py``)::

    python benchmarks/synthetic_corpus.py --passages 1000000 --out /tmp/m/c.jsonl --seed 0
    python benchmarks/synthetic_vectors.py --n 1000000 --dim 384 --out /tmp/m/v.npy --queries 300
    python benchmarks/faiss_search_memory.py --corpus /tmp/m/c.jsonl --vectors /tmp/m/v.npy --store /tmp/m/store

Queries are ``V.queries.npy`` beside the vectors. One core (``faiss.omp_set_num_threads(1)``). Prints, never asserts.
"""

import argparse
import json
import resource
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np
from haystack import Document

SIDES = ("raw", "ours")
Answer = Callable[[np.ndarray, int], list[Document]]


def build(corpus: Path, vectors: Path, store: Path) -> None:
    """Write the corpus with its vectors into a Flat store at STORE (``write_embeddings``, then one ``save``)."""
    from components.stores.faiss.document_store import FAISSDocumentStore

    matrix = np.load(vectors, mmap_mode="r")
    with corpus.open(encoding="utf-8") as lines:
        documents = [
            Document(id=row["id"], content=row["contents"], meta={"title": row["title"]})
            for row in map(json.loads, lines)
        ]
    start = time.perf_counter()
    writer = FAISSDocumentStore(path=str(store), autosave=False, embedding_dim=matrix.shape[1])
    writer.write_embeddings(documents, matrix)
    writer.save()
    print(f"built {len(documents):,} documents in {time.perf_counter() - start:.0f} s")


def search(side: str, store: Path, queries: Path, top_k: int) -> None:
    """Answer every query one at a time on SIDE; print the process's resident memory before and after."""
    faiss.omp_set_num_threads(1)
    asked = np.load(queries).astype(np.float32)
    answer = _ours(store) if side == "ours" else _raw(store)
    opened = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    hits = [answer(query[np.newaxis], top_k) for query in asked]
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    first = [d.id for d in hits[0]]
    print(json.dumps({"side": side, "opened_mb": opened, "peak_mb": peak, "qps": len(asked) / elapsed, "first": first}))


def _ours(store: Path) -> Answer:
    """Our store opened from STORE: ``search`` per query."""
    from components.stores.faiss.document_store import FAISSDocumentStore

    opened = FAISSDocumentStore.load(str(store))
    opened.count_documents()  # loads it now
    return lambda query, top_k: opened.search(query, top_k)[0]


def _raw(store: Path) -> Answer:
    """Raw faiss over STORE's saved index; hits read from its SQLite file and decoded the ordinary way."""
    generation = store / (store / "CURRENT").read_text().strip()
    index = faiss.read_index(str(generation / "vectors.faiss"))
    uri = f"{(generation / 'documents.sqlite').resolve().as_uri()}?mode=ro&immutable=1"
    db = sqlite3.connect(uri, uri=True)

    def answer(query: np.ndarray, top_k: int) -> list[Document]:
        scores, rows = index.search(query, top_k)
        hit_rows = [row for row in rows[0].tolist() if row >= 0]
        marks = ",".join("?" * len(hit_rows))
        texts = dict(db.execute(f"SELECT row, document FROM documents WHERE row IN ({marks})", hit_rows))
        found = []
        for row, score in zip(hit_rows, scores[0].tolist(), strict=False):
            document = Document.from_dict(json.loads(texts[row]))
            document.score = score
            found.append(document)
        return found

    return answer


def main() -> None:
    """Build the store when missing, then run each side in a fresh process and print their memory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="JSONL corpus (to build STORE when it does not exist)")
    parser.add_argument("--vectors", type=Path, required=True, help="float32 .npy of the corpus (V.queries.npy beside)")
    parser.add_argument("--store", type=Path, required=True, help="the saved store (built here when missing)")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a child process
    parser.add_argument("--build", action="store_true", help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    queries = args.vectors.with_suffix(".queries.npy")
    if args.build:
        build(args.corpus, args.vectors, args.store)
        return
    if args.side:
        search(args.side, args.store, queries, args.top_k)
        return
    own = [sys.executable, __file__, "--vectors", str(args.vectors), "--store", str(args.store)]
    if not (args.store / "CURRENT").exists():
        subprocess.run([*own, "--build", "--corpus", str(args.corpus)], check=True)
    found = {}
    for side in SIDES:
        run = subprocess.run([*own, "--side", side, "--top-k", str(args.top_k)], check=True, capture_output=True)
        found[side] = json.loads(run.stdout.decode().strip().splitlines()[-1])
    raw, ours = found["raw"], found["ours"]
    print(f"{args.store}: {len(np.load(queries, mmap_mode='r'))} queries, top_k {args.top_k}, one core")
    print(f"{'side':>5} {'RSS opened MB':>14} {'peak RSS MB':>12} {'queries/s':>10}")
    for side, row in found.items():
        print(f"{side:>5} {row['opened_mb']:>14.0f} {row['peak_mb']:>12.0f} {row['qps']:>10.0f}")
    same = ours["first"] == raw["first"]
    print(f"ours - raw peak RSS: {ours['peak_mb'] - raw['peak_mb']:+.0f} MB; same first hits: {same}")


if __name__ == "__main__":
    main()
