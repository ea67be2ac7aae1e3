"""Milvus tenants: a tenant-filtered search of a keyed collection against a collection holding only that tenant.

DOCS clustered unit vectors (``synthetic_vectors``) are spread over TENANTS equal tenants and written into three
Milvus Lite collections of one database:

- ``keyed``: every document, ``partition_key_field="tenant"``; searched with ``meta.tenant == T`` (the expression
  ``tenant in ["T"]`` on the partition key);
- ``unkeyed``: every document, the tenant an ordinary meta key; searched with the same filter (``$meta["tenant"]``);
- ``alone``: only tenant T's documents, searched without a filter (the target a tenant filter should reach).

One query at a time (dense, ``top_k`` 10, tenant ``t0``), the sides interleaved by ``rotating_rounds``, it prints
the median milliseconds of each side and the paired ratios keyed/alone and unkeyed/keyed, and checks that no hit
of a filtered search belongs to another tenant. Milvus Lite does not prune partitions (a keyed search costs about
a search of the whole collection); a Milvus server searches only the tenant's partition, which this script, on
Lite, does not measure.

    python benchmarks/milvus_tenants.py [--docs 20000] [--tenants 20] [--queries 200] [--dim 64]
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from haystack import Document

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import paired_ratio, rotating_rounds
from synthetic_vectors import centres

from components.stores.milvus import MilvusDocumentStore


def vectors(count: int, dim: int, seed: int) -> np.ndarray:
    """COUNT clustered unit vectors (100 centres, as ``synthetic_vectors`` draws them)."""
    rng = np.random.default_rng(seed)
    points = centres(100, dim, 0)[rng.integers(0, 100, count)] + 0.9 * rng.standard_normal((count, dim)) / dim**0.5
    unit: np.ndarray = (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)
    return unit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=64)
    args = parser.parse_args()
    corpus = vectors(args.docs, args.dim, 1)
    queries = vectors(args.queries, args.dim, 2)
    tenant_of = [f"t{i % args.tenants}" for i in range(args.docs)]
    documents = [
        Document(id=f"d{i}", content=f"document {i}", embedding=corpus[i].tolist(), meta={"tenant": tenant_of[i]})
        for i in range(args.docs)
    ]
    with tempfile.TemporaryDirectory() as root:
        uri = str(Path(root) / "m.db")
        keyed = MilvusDocumentStore(uri=uri, collection_name="keyed", partition_key_field="tenant", bm25=False)
        unkeyed = MilvusDocumentStore(uri=uri, collection_name="unkeyed", bm25=False)
        for store in (keyed, unkeyed):
            store.write_documents(documents)
            store.flush()
        chosen = "t0"
        alone = MilvusDocumentStore(uri=uri, collection_name="alone", bm25=False)
        alone.write_documents([d for d in documents if d.meta["tenant"] == chosen])
        alone.flush()
        only = {"field": "meta.tenant", "operator": "==", "value": chosen}
        position = iter(range(10**9))

        def query() -> list[list[float]]:
            return [queries[next(position) % args.queries].tolist()]

        def run_keyed() -> None:
            hits = keyed.embedding_search(query(), 10, only)[0]
            assert {h.meta["tenant"] for h in hits} == {chosen}

        def run_unkeyed() -> None:
            hits = unkeyed.embedding_search(query(), 10, only)[0]
            assert {h.meta["tenant"] for h in hits} == {chosen}

        def run_alone() -> None:
            alone.embedding_search(query(), 10)

        times = rotating_rounds(args.queries, [run_alone, run_keyed, run_unkeyed])
        share = args.docs // args.tenants
        print(f"{args.docs} documents, {args.tenants} tenants of {share}, dim {args.dim}, {args.queries} queries")
        for name, side in zip(("alone", "keyed", "unkeyed"), times, strict=True):
            print(f"  {name:8s} median {1000 * statistics.median(side):.2f} ms")
        print(f"  keyed / alone   {paired_ratio(times, 1, 0):.2f}x")
        print(f"  unkeyed / keyed {paired_ratio(times, 2, 1):.2f}x")
        for store in (keyed, unkeyed, alone):
            store.close()


if __name__ == "__main__":
    main()
