"""Filters on a FAISS store opened from disk: SQLite narrowing the candidates (``components.stores.filter_sql``)
against the whole-table pass it replaces, and against a hand-written peer.

One FAISS store (Flat, 16-d random vectors: the vectors play no part here) holds DOCS documents whose meta has a
``tenant`` (one of 100), a ``year`` (2000-2029) and ``tags`` (a list), saved and opened again as `needle search` opens
an index (its documents stay in ``documents.sqlite``). For each filter it times, in interleaved rounds:

- ``needle``: ``count_documents_by_filter(F)``: SQLite lets through the documents F may match, Haystack's
  ``document_matches_filter`` decides on each;
- ``whole``: the same with ``NOT(NOT(F))``, which SQLite does not judge: every document decoded and tested, as every
  filter was before;
- ``raw``: a hand-written peer: every row of ``documents.sqlite`` read with sqlite3, decoded with ``json.loads`` and
  ``Document.from_dict``, tested with ``document_matches_filter``;

checks that all three count the same, and prints each side's best round and the ratios. Also a filtered search
(``store.search`` with F, top_k 10), whose allowed rows come from the same pass.

    python benchmarks/filter_pushdown.py [--docs 200000] [--rounds 3]
"""

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from haystack.utils.filters import document_matches_filter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.stores.faiss.document_store import FAISSDocumentStore

DIM, CHUNK = 16, 50_000
FILTERS: dict[str, dict[str, Any]] = {
    "tenant in 2 of 100, year >= 2020": {
        "operator": "AND",
        "conditions": [
            {"field": "meta.tenant", "operator": "in", "value": ["t3", "t4"]},
            {"field": "meta.year", "operator": ">=", "value": 2020},
        ],
    },
    "year == 2003 or tenant == t7": {
        "operator": "OR",
        "conditions": [
            {"field": "meta.year", "operator": "==", "value": 2003},
            {"field": "meta.tenant", "operator": "==", "value": "t7"},
        ],
    },
    "year < 2015 (half)": {"field": "meta.year", "operator": "<", "value": 2015},
}


def build(path: Path, docs: int) -> None:
    """A saved FAISS store of DOCS documents at PATH."""
    store = FAISSDocumentStore(path=str(path), autosave=False)
    rng = np.random.default_rng(0)
    for start in range(0, docs, CHUNK):
        rows = range(start, min(start + CHUNK, docs))
        metas = [{"tenant": f"t{n % 100}", "year": 2000 + n % 30, "tags": ["a", f"b{n % 7}"]} for n in rows]
        vectors = rng.standard_normal((len(rows), DIM)).astype(np.float32)
        store.write_fields([f"d{n}" for n in rows], [f"passage {n}" for n in rows], metas, vectors)
    store.save()


def raw_count(table: Path, filters: dict[str, Any]) -> int:
    """The hand-written peer: every row decoded and tested."""
    with sqlite3.connect(table) as db:
        rows = db.execute("SELECT document FROM documents ORDER BY row")
        return sum(document_matches_filter(filters, Document.from_dict(json.loads(text))) for (text,) in rows)


def best(call: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """The fastest of ROUNDS calls, and what the call returned."""
    times, result = [], None
    for _ in range(rounds):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "store"
        build(path, args.docs)
        store = FAISSDocumentStore.load(str(path))
        table = next(path.glob("gen-*/documents.sqlite"))
        query = np.random.default_rng(1).standard_normal((1, DIM)).astype(np.float32)
        print(f"{args.docs:,} documents, a store opened from disk; best of {args.rounds} rounds, seconds")
        print(f"{'filter':36}{'needle':>9}{'whole':>9}{'raw':>9}{'whole/needle':>14}{'raw/needle':>12}{'search':>9}")
        for name, filters in FILTERS.items():
            twice_negated = {"operator": "NOT", "conditions": [{"operator": "NOT", "conditions": [filters]}]}
            ours, counted = best(lambda f=filters: store.count_documents_by_filter(f), args.rounds)
            whole, whole_counted = best(lambda f=twice_negated: store.count_documents_by_filter(f), args.rounds)
            raw, raw_counted = best(lambda f=filters: raw_count(table, f), 1)
            assert counted == whole_counted == raw_counted, (counted, whole_counted, raw_counted)
            search, _ = best(lambda f=filters: store.search(query, 10, filters=f), args.rounds)
            print(f"{name:36}{ours:9.2f}{whole:9.2f}{raw:9.2f}{whole / ours:13.1f}x{raw / ours:11.1f}x{search:9.2f}")


if __name__ == "__main__":
    main()
