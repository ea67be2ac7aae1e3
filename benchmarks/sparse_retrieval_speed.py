"""The learned sparse store's search against a plain SciPy sparse dot product over the same vectors: latency per
query and whether the two agree, on random SPLADE-shaped vectors (no model needed).

Vectors: each of N documents gets ``--terms`` distinct term ids of a 30,522-term vocabulary (BERT's) drawn with a
Zipf-like skew (a few terms are common, as in real SPLADE output), with weights in (0, 3]; each query 30 terms.
Sides, run interleaved, one query at a time, on the same queries:

- ``store``: ``SparseDocumentStore.sparse_embedding_retrieval`` (what the retrievers call: input checks, the
  inverted index's postings, top-k, the hit Documents built with their vectors);
- ``scipy``: ``csr_matrix @ query`` over every document, then ``argpartition``: the reference score, no Documents.

Also reported: the store's write (all documents in one call) and its save + reopen (digests checked), and the share
of queries whose top-10 ids are the reference's (ties aside: 1.000 expected).

    .venv/bin/python benchmarks/sparse_retrieval_speed.py [--documents 100000] [--terms 120] [--queries 200]
"""

import argparse
import statistics
import tempfile
import time

import numpy as np
import scipy.sparse as sp
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from components.stores.sparse.document_store import SparseDocumentStore

VOCABULARY = 30522


def vectors(rng: np.random.Generator, count: int, terms: int) -> list[SparseEmbedding]:
    """COUNT random vectors of TERMS distinct, Zipf-skewed term ids."""
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 0.8
    weights /= weights.sum()
    found = []
    for _ in range(count):
        ids = np.sort(rng.choice(VOCABULARY, size=terms, replace=False, p=weights))
        found.append(SparseEmbedding(ids.tolist(), rng.uniform(0.01, 3.0, size=terms).astype(np.float32).tolist()))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--terms", type=int, default=120)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    docs = vectors(rng, args.documents, args.terms)
    queries = vectors(rng, args.queries, 30)
    rows = np.repeat(np.arange(len(docs)), [len(v.indices) for v in docs])
    matrix = sp.csr_matrix(
        (np.concatenate([v.values for v in docs]), (rows, np.concatenate([v.indices for v in docs]))),
        shape=(len(docs), VOCABULARY),
        dtype=np.float32,
    )
    with tempfile.TemporaryDirectory() as work:
        store = SparseDocumentStore(path=f"{work}/sparse", autosave=False)
        start = time.perf_counter()
        store.write_documents(
            [Document(id=f"d{i}", content=f"passage {i}", sparse_embedding=v) for i, v in enumerate(docs)]
        )
        store.warm_up()
        wrote = time.perf_counter() - start
        start = time.perf_counter()
        store.save()
        reopened = SparseDocumentStore(path=f"{work}/sparse")
        reopened.warm_up()
        saved = time.perf_counter() - start
        times: dict[str, list[float]] = {"store": [], "scipy": []}
        agree = 0
        for query in queries:
            start = time.perf_counter()
            hits = reopened.sparse_embedding_retrieval(query, top_k=10)
            times["store"].append(time.perf_counter() - start)
            start = time.perf_counter()
            dense_query = np.zeros(VOCABULARY, dtype=np.float32)
            dense_query[query.indices] = query.values
            scores = matrix @ dense_query
            best = np.argpartition(-scores, 9)[:10]
            best = best[np.argsort(-scores[best], kind="stable")]
            times["scipy"].append(time.perf_counter() - start)
            agree += [d.id for d in hits] == [f"d{i}" for i in best]
    store_ms, scipy_ms = (statistics.median(times[s]) * 1000 for s in ("store", "scipy"))
    print(f"{args.documents:,} documents x {args.terms} terms, {args.queries} queries of 30 terms")
    print(f"write + inverted index: {wrote:.1f} s; save + reopen (digests checked): {saved:.1f} s")
    print(
        f"median per query: store {store_ms:.2f} ms, scipy dot product {scipy_ms:.2f} ms ({scipy_ms / store_ms:.2f}x)"
    )
    print(f"top-10 identical to the reference: {agree / args.queries:.3f}")


if __name__ == "__main__":
    main()
