"""Tenant filters: a filtered search of a shared index against a search of an index holding only that tenant.

One FAISS store (Flat, 384-d clustered vectors) and one BM25 store (the synthetic Zipf corpus) hold DOCS documents
of TENANTS tenants of unequal size (tenant i's share ~ 1 / (i + 1)), both saved and opened again as `needle search`
opens them; a second FAISS store (``faiss-mem``) holds the same documents as written in this process, never saved
(its index is FAISS's base ``IndexFlat``, a reopened one an ``IndexFlatIP``: both take the tenant's Flat index).
For the largest, a middle and the smallest tenant, one query at a time, it times

- ``tenant``: the shared store searched with ``{"field": "meta.tenant", "operator": "==", "value": T}`` (the fast
  path, ``components.stores.tenants``), its row lists and tenant matrix built beforehand (``first`` is that
  one-time cost, paid by the first search of a field after the store opened or changed);
- ``alone``: an unfiltered search of a store holding only that tenant's documents (the target);
- ``generic``: the same filter written so that the fast path does not recognise it (``NOT(NOT(f))``): the old path.
  ``cold`` is its first query of the filter (the BM25 store keeps the masks of its last 32 filters, so with more
  tenants than that every query is a first one), ``generic`` the mean of its next ``GENERIC_QUERIES``;

and prints each side's time per query in its fastest round (on a shared machine, the round least slowed by others)
and the ratios tenant/alone and generic/tenant. Tenant and alone run interleaved (``rotating_rounds``), FAISS on one
thread (``--threads``). The hits of ``tenant`` and ``generic`` are checked to be equal.

    python benchmarks/tenant_filter.py [--docs 200000] [--tenants 100] [--queries 50] [--dim 384]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from haystack import Document

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import rotating_rounds
from synthetic_corpus import passages, queries
from synthetic_vectors import centres, clustered, default_clusters

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore

GENERIC_QUERIES = 3  # queries the generic path is timed on (a whole-corpus scan each)


def tenants_of(docs: int, tenants: int, seed: int = 0) -> np.ndarray:
    """Each document's tenant number, tenant i drawn with probability ~ 1 / (i + 1) (a few large, a long tail)."""
    weights = 1.0 / np.arange(1, tenants + 1)
    return np.random.default_rng([seed, 7]).choice(tenants, size=docs, p=weights / weights.sum())


def tenant_filter(tenant: str) -> dict[str, Any]:
    return {"field": "meta.tenant", "operator": "==", "value": tenant}


def generic(filters: dict[str, Any]) -> dict[str, Any]:
    """FILTERS as the fast path does not recognise them (a double negation): the generic filtered search."""
    return {"operator": "NOT", "conditions": [{"operator": "NOT", "conditions": [filters]}]}


def saved_faiss(path: Path, ids: list[str], tenant: list[str], vectors: np.ndarray) -> FAISSDocumentStore:
    """A Flat FAISS store of these documents saved at PATH, opened again."""
    store = FAISSDocumentStore(path=str(path), autosave=False)
    docs = [Document(id=i, content=f"passage {i}", meta={"tenant": t}) for i, t in zip(ids, tenant, strict=True)]
    store.write_embeddings(docs, vectors)
    store.save()
    return FAISSDocumentStore(path=str(path))


def memory_faiss(ids: list[str], tenant: list[str], vectors: np.ndarray) -> FAISSDocumentStore:
    """A Flat FAISS store of these documents, in memory only (as written in this process)."""
    store = FAISSDocumentStore()
    docs = [Document(id=i, content=f"passage {i}", meta={"tenant": t}) for i, t in zip(ids, tenant, strict=True)]
    store.write_embeddings(docs, vectors)
    return store


def saved_bm25(path: Path, ids: list[str], tenant: list[str], texts: list[str]) -> BM25DocumentStore:
    """A BM25 store of these documents saved at PATH, opened again (its numba kernels warmed)."""
    store = BM25DocumentStore(path=str(path), autosave=False)
    docs = [Document(id=i, content=c, meta={"tenant": t}) for i, c, t in zip(ids, texts, tenant, strict=True)]
    store.write_documents(docs)
    store.save()
    opened = BM25DocumentStore(path=str(path))
    opened.warm_up()
    return opened


def best_ms(times: list[float], count: int) -> float:
    """Milliseconds per query of the fastest round: on a shared machine, the round least slowed by others."""
    return min(times) / count * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--queries", type=int, default=50, help="queries per tenant, searched one at a time")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="FAISS's OpenMP threads (default 1: steadier timings)")
    args = parser.parse_args()
    faiss.omp_set_num_threads(args.threads)

    owner = tenants_of(args.docs, args.tenants)
    names = [f"t{number:03d}" for number in owner.tolist()]
    sizes = np.bincount(owner, minlength=args.tenants)
    present = np.flatnonzero(sizes)
    by_size = present[np.argsort(-sizes[present], kind="stable")]
    picked = [int(by_size[0]), int(by_size[len(by_size) // 2]), int(by_size[-1])]
    corpus = list(passages(args.docs))
    ids, texts = [p["id"] for p in corpus], [p["title"] + " " + p["contents"] for p in corpus]
    vectors = clustered(np.random.default_rng([0, 1]), args.docs, centres(default_clusters(args.docs), args.dim, 0))
    query_vectors = clustered(
        np.random.default_rng([0, 2]), args.queries, centres(default_clusters(args.docs), args.dim, 0)
    )
    query_texts = queries(args.queries, corpus_size=args.docs)
    print(
        f"{args.docs:,} documents, {args.tenants} tenants (largest {sizes.max():,}, smallest {sizes[present].min():,})"
    )

    with tempfile.TemporaryDirectory(prefix="tenant-bench-") as scratch:
        root = Path(scratch)
        start = time.perf_counter()
        shared = {
            "faiss": saved_faiss(root / "faiss", ids, names, vectors),
            "bm25": saved_bm25(root / "bm25", ids, names, texts),
            "faiss-mem": memory_faiss(ids, names, vectors),
        }
        print(f"built both shared stores in {time.perf_counter() - start:.0f} s")
        print(f"{'store':9} {'tenant':>7} {'docs':>7} {'first ms':>9} {'tenant ms':>10} {'alone ms':>9} "
              f"{'cold ms':>10} {'generic ms':>11} {'tenant/alone':>13} {'generic/tenant':>15}")  # fmt: skip
        for number in picked:
            name = f"t{number:03d}"
            mine = np.flatnonzero(owner == number)
            own_ids, own_names = [ids[i] for i in mine], [name] * len(mine)
            alone = {
                "faiss": saved_faiss(root / f"faiss-{name}", own_ids, own_names, vectors[mine]),
                "bm25": saved_bm25(root / f"bm25-{name}", own_ids, own_names, [texts[i] for i in mine]),
            }
            alone["faiss-mem"] = alone["faiss"]
            for kind in ("faiss", "faiss-mem", "bm25"):
                report(kind, name, len(mine), shared[kind], alone[kind], query_vectors, query_texts, args.rounds)


def report(
    kind: str,
    name: str,
    size: int,
    shared: Any,
    alone: Any,
    query_vectors: np.ndarray,
    query_texts: list[str],
    rounds: int,
) -> None:
    """Time the three sides for one tenant and store kind and print one line."""
    filters = tenant_filter(name)
    if kind != "bm25":

        def run(store: Any, f: dict[str, Any] | None, count: int = len(query_texts)) -> list[Any]:
            return [store.search(query_vectors[i : i + 1], 10, f)[0] for i in range(count)]
    else:

        def run(store: Any, f: dict[str, Any] | None, count: int = len(query_texts)) -> list[Any]:
            return [store.bm25_retrieval(q, f, 10) for q in query_texts[:count]]

    start = time.perf_counter()
    if kind != "bm25":  # the first query builds the row lists (once per store) and the tenant's Flat index
        shared.search(query_vectors[:1], 10, filters)
    else:  # or the tenant's matrix
        shared.bm25_retrieval(query_texts[0], filters, 10)
    first = (time.perf_counter() - start) * 1e3
    fast = run(shared, filters, GENERIC_QUERIES)
    start = time.perf_counter()  # the generic path is slow: timed on a few queries, once
    slow = run(shared, generic(filters), 1)
    cold_ms = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    slow = run(shared, generic(filters), GENERIC_QUERIES)
    generic_ms = (time.perf_counter() - start) * 1e3 / GENERIC_QUERIES
    if [[(d.id, d.score) for d in hits] for hits in fast] != [[(d.id, d.score) for d in hits] for hits in slow]:
        raise SystemExit(f"{kind} {name}: the tenant path's hits differ from the generic path's")
    count = len(query_texts)
    times = rotating_rounds(rounds, [lambda: run(shared, filters), lambda: run(alone, None)])
    tenant_ms, alone_ms = best_ms(times[0], count), best_ms(times[1], count)
    print(f"{kind:9} {name:>7} {size:>7,} {first:>9.0f} {tenant_ms:>10.3f} {alone_ms:>9.3f} {cold_ms:>10.1f} "
          f"{generic_ms:>11.2f} {tenant_ms / alone_ms:>13.2f} {generic_ms / tenant_ms:>15.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
