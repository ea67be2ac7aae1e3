"""BM25 speed: our BM25DocumentStore and retrievers vs raw bm25s, and vs Haystack's InMemoryBM25Retriever.

Same corpus, same tokenization (English stopwords + Snowball stemmer), same Lucene k1=0.9 b=0.4, in one run:

- indexing, documents/s: ours = ``write_documents`` + the first search's build; raw = ``bm25s.tokenize`` +
  ``BM25.index``;
- single queries, queries/s: ``BM25Retriever.run`` (documents materialised) vs ``bm25s.tokenize`` + ``retrieve``
  per query; the small size also reports our fixed cost per query in µs (our latency minus raw bm25s');
- batch, queries/s: ``BM25BatchRetriever.run`` on all queries vs one ``bm25s.tokenize`` + ``retrieve`` call;
- vs Haystack's pure-Python ``InMemoryBM25Retriever`` on SciFact (a subset of queries: it is slow).

``small`` uses SciFact as is (5,183 passages, 300 test queries); ``large`` synthesizes 100,000 passages by
repeating SciFact's with perturbations (dropped and swapped words, per-copy spelling variants). Rows for the
numba backend (our default, against raw bm25s on its numba backend) follow the numpy ones; one-off JIT
compilation (ours: loading numba's disk cache; raw: compiling bm25s' functions) is excluded from the timings.
A ratio is ours / raw, so >= 1 means we are as fast; the target for numba is >= 0.9 on every row.

    .venv/bin/python benchmarks/bench_bm25.py [--size small|large]
"""

import argparse
import json
import random
import time
from collections.abc import Callable
from pathlib import Path

import bm25s
import Stemmer
from haystack import Document

from components.retrievers.bm25.batch_retriever import BM25BatchRetriever
from components.retrievers.bm25.retriever import BM25Retriever
from components.stores.bm25.document_store import BM25DocumentStore

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
SIZES = {"small": 0, "large": 100_000}  # passages to synthesize (0: SciFact as is)
IN_MEMORY_QUERIES = 20
ROUNDS = 5


def load_scifact() -> tuple[list[Document], list[str]]:
    """SciFact passages (title + text) and the texts of its 300 test queries."""
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f:
        corpus = [json.loads(line) for line in f]
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as f:
        queries = {q["_id"]: q["text"] for q in map(json.loads, f)}
    qrels = (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]
    test_ids = dict.fromkeys(line.split("\t")[0] for line in qrels)
    documents = [Document(id=d["_id"], content=f"{d['title']} {d['text']}") for d in corpus]
    return documents, [queries[q] for q in test_ids]


def synthesize(documents: list[Document], n: int, seed: int = 0) -> list[Document]:
    """``n`` passages: SciFact ones repeated, each copy with ~10% words dropped, some swapped, some respelled."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        copy, source = divmod(i, len(documents))
        words = [w for w in documents[source].content.split() if rng.random() > 0.1]
        for _ in range(len(words) // 20):
            a, b = rng.randrange(len(words)), rng.randrange(len(words))
            words[a], words[b] = words[b], words[a]
        words = [f"{w}{copy}" if rng.random() < 0.05 else w for w in words]
        out.append(Document(id=f"{documents[source].id}-{copy}", content=" ".join(words)))
    return out


def best_seconds(*actions: Callable[[], object], rounds: int = ROUNDS) -> list[float]:
    """
    Fastest of ``rounds`` timed runs of each action, the actions taking turns within every round: the machine
    is shared, so the minimum is the least disturbed run, and alternating exposes both sides to the same load.
    """
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(rounds):
        for action, spent in zip(actions, times, strict=True):
            start = time.perf_counter()
            action()
            spent.append(time.perf_counter() - start)
    return [min(spent) for spent in times]


class RawBM25s:
    """The peer: bm25s used directly, as its README shows."""

    def __init__(self, documents: list[Document], backend: str) -> None:
        """Tokenize and index, timing both."""
        self.stemmer = Stemmer.Stemmer("english")
        self.retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4, backend=backend)
        start = time.perf_counter()
        texts = [d.content for d in documents]
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever.index(tokens, show_progress=False)
        self.index_seconds = time.perf_counter() - start
        self.corpus = documents

    def search(self, queries: list[str], n_threads: int = 0) -> object:
        """Tokenize ``queries`` and retrieve the top 10 documents of each, in one call."""
        tokens = bm25s.tokenize(queries, stopwords="en", stemmer=self.stemmer, show_progress=False)
        return self.retriever.retrieve(
            tokens, corpus=self.corpus, k=10, show_progress=False, n_threads=n_threads, return_as="documents"
        )


def ours_index(documents: list[Document], backend: str) -> tuple[BM25DocumentStore, float]:
    """Write the documents and build the index (the first search builds it), timed together."""
    store = BM25DocumentStore(backend=backend)
    start = time.perf_counter()
    store.write_documents(documents)
    store.warm_up()
    return store, time.perf_counter() - start


def compile_numba_paths(documents: list[Document], backend: str) -> None:
    """Load (or compile) both sides' numba functions once, outside every timing: build, serial and parallel."""
    tiny = BM25DocumentStore(backend=backend)
    tiny.write_documents(documents[:20])
    tiny.warm_up()
    tiny.warm_up(n_threads=-1)
    raw = RawBM25s(documents[:20], backend)
    texts = [d.content or "" for d in documents[:2]]
    raw.search(texts[:1])
    raw.search(texts, n_threads=-1)


def compare_backend(documents: list[Document], queries: list[str], backend: str, size: str) -> list[dict]:
    """Indexing, single-query and batch rows for one bm25s backend."""
    compile_numba_paths(documents, backend)
    raw = RawBM25s(documents, backend)
    store, ours_seconds = ours_index(documents, backend)
    single, batch = BM25Retriever(store, top_k=10), BM25BatchRetriever(store, top_k=10, n_threads=-1)
    n_docs, n_queries = len(documents), len(queries)
    raw_single, ours_single = best_seconds(
        lambda: [raw.search([q]) for q in queries], lambda: [single.run(query=q) for q in queries]
    )
    raw_batch, ours_batch = best_seconds(lambda: raw.search(queries, n_threads=-1), lambda: batch.run(queries=queries))
    label = f"{backend}, {n_docs:,} docs"
    rows = [
        _row(
            f"index ({label})",
            n_docs / ours_seconds,
            n_docs / raw.index_seconds,
            "docs/s",
            "ours: write_documents + first build; raw: bm25s.tokenize + index",
        ),
        _row(
            f"single query ({label})",
            n_queries / ours_single,
            n_queries / raw_single,
            "queries/s",
            "BM25Retriever.run, documents materialised, vs bm25s tokenize + retrieve per query",
        ),
        _row(
            f"batch of {n_queries} ({label})",
            n_queries / ours_batch,
            n_queries / raw_batch,
            "queries/s",
            "BM25BatchRetriever (n_threads=-1) vs one bm25s tokenize + retrieve call",
        ),
    ]
    if size == "small":
        ours_us, raw_us = 1e6 * ours_single / n_queries, 1e6 * raw_single / n_queries
        rows.append(
            _row(
                f"single-query latency ({label})",
                ours_us,
                raw_us,
                "µs/query",
                f"fixed cost of ours per query: {ours_us - raw_us:+.0f} µs",
            )
        )
    return rows


def compare_in_memory(documents: list[Document], queries: list[str]) -> dict:
    """Our single-query retriever vs Haystack's InMemoryBM25Retriever, on the first queries only."""
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    subset = queries[:IN_MEMORY_QUERIES]
    in_memory = InMemoryDocumentStore()
    in_memory.write_documents(documents)
    peer = InMemoryBM25Retriever(in_memory, top_k=10)
    store, _ = ours_index(documents, "numpy")
    ours = BM25Retriever(store, top_k=10)
    (peer_seconds,) = best_seconds(lambda: [peer.run(query=q) for q in subset], rounds=1)
    (ours_seconds,) = best_seconds(lambda: [ours.run(query=q) for q in subset])
    return _row(
        f"single query vs InMemoryBM25Retriever ({len(documents):,} docs)",
        len(subset) / ours_seconds,
        len(subset) / peer_seconds,
        "queries/s",
        f"first {len(subset)} SciFact test queries; target >= 100x",
    )


def _row(benchmark: str, ours: float, peer: float, unit: str, note: str) -> dict:
    """One result row in the shape benchmarks/run.py collects."""
    return {"benchmark": benchmark, "ours": ours, "peer": peer, "unit": unit, "ratio": ours / peer, "note": note}


def run(size: str = "small") -> list[dict]:
    """All BM25 rows for ``size`` ("small": SciFact, under a minute; "large": 100,000 synthesized passages)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}; got {size!r}")
    documents, queries = load_scifact()
    corpus = synthesize(documents, SIZES[size]) if SIZES[size] else documents
    rows = compare_backend(corpus, queries, "numpy", size)
    rows += compare_backend(corpus, queries, "numba", size)
    if size == "small":
        rows.append(compare_in_memory(documents, queries))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=list(SIZES), default="small")
    for result in run(parser.parse_args().size):
        print(
            f"{result['benchmark']:<55} ours {result['ours']:>11,.1f}  peer {result['peer']:>11,.1f} "
            f"{result['unit']:<10} ratio {result['ratio']:>7.2f}  {result['note']}"
        )
