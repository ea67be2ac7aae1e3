"""BM25 speed on one core: needle's BM25 index searched through ``Searcher`` vs raw bm25s (numba), PISA, tantivy.

Ours: ``needle_retrieval.index.build.build_index`` (BM25 only, the default tokenizer) into a temporary directory,
searched with ``needle_retrieval.search.searcher.Searcher(DIR, "bm25", top_k)``: the YAML batch pipeline, new Haystack
Documents out (content and meta read from the saved index), its retriever on one thread (``n_threads: 1``). Raw bm25s:
the same passages (``iter_corpus``, as the index reader reads them), ``bm25s.tokenize`` (English stopwords, Snowball
stemmer) and ``BM25(method="lucene", k1=0.9, b=0.4, backend="numba")``, ``retrieve(n_threads=1)``; its hits with a score
become Haystack Documents the cheapest way (the stored fields copied into a new object with the score and its own meta,
the collector off meanwhile), since a retriever must return Documents. The note gives the ratio against raw bm25s
returning only its (rows, scores) arrays as well. PISA (``pyterrier_pisa``, Porter, k1 0.9, b 0.4) and tantivy
(``tantivy``, its ``en_stem`` analyzer) are set against ours in the same rounds when installed (their hits become
Documents the same way); when not, a note says so and their rows are left out.

Rows per top_k (10 and 100): single queries (each query alone, the whole query list per timed run) and one batch
of all queries, in queries/s; every side runs in the same rounds, back to back in rotating order; the ratio is
ours / peer as the median of the rounds' own ratios (best-of ratio in the note): >= 1 means ours is as fast, the
goal is >= 0.9 against raw bm25s. One core: every side searches on one thread (``n_threads=1``: bm25s then runs
its serial numba kernel, ours is serial too), so numba's thread count does not matter.

``small``: SciFact (``../shared/data/scifact``, read in place; its 300 test queries), or 5,183 synthetic passages
(``synthetic_corpus.py``) when it is absent; also the build speed and Haystack's ``InMemoryBM25Retriever``.
``large``: 1,000,000 synthetic passages and 1,000 queries (minutes: run it once); raw bm25s then searches the
bm25s files of our saved index (``BM25.load``, memory-mapped): building it with bm25s takes a quarter of an hour.

    .venv/bin/python benchmarks/bench_bm25.py [--size small|large]
"""

import argparse
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer
from haystack import Document

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired_ratio, rotating_rounds
from bm25_peers import documents_out, installed_peers
from synthetic_corpus import queries as synthetic_queries
from synthetic_corpus import write_corpus

from components.converters.jsonl_corpus_reader import iter_corpus
from components.retrievers.bm25.batch_retriever import BM25BatchRetriever
from needle_retrieval.defaults import DEFAULT_MODEL
from needle_retrieval.index.build import build_index
from needle_retrieval.search.searcher import Searcher

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
SIZES = {"small": (5_183, 300, 7), "large": (1_000_000, 1_000, 3)}  # synthetic passages, queries, rounds
TOP_KS = (10, 100)
IN_MEMORY_QUERIES = 20
ROUNDS_IN_MEMORY = 2
Search = Callable[[list[str]], object]


def corpus(size: str, work: Path) -> tuple[Path, list[str], str]:
    """The corpus JSONL, its queries and its name: SciFact for ``small`` when present, else synthetic passages."""
    passages, count, _ = SIZES[size]
    if size == "small" and (SCIFACT / "corpus.jsonl").exists():
        with open(SCIFACT / "queries.jsonl", encoding="utf-8") as f:
            texts = {q["_id"]: q["text"] for q in map(json.loads, f)}
        qrels = (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
        return SCIFACT / "corpus.jsonl", [texts[q] for q in dict.fromkeys(r.split("\t")[0] for r in qrels)], "SciFact"
    path = write_corpus(work / "corpus.jsonl", passages, seed=0)
    return path, synthetic_queries(count, seed=0, corpus_size=passages), f"{passages:,} synthetic passages"


class RawBM25s:
    """The peer: bm25s used directly, as its README shows, on one thread."""

    def __init__(self, stored: list[Document], saved: Path | None = None) -> None:
        """Index the passages (timed), or load the bm25s files of ``saved`` memory-mapped."""
        self.stemmer, self.stored = Stemmer.Stemmer("english"), stored
        start = time.perf_counter()
        if saved is None:
            self.retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4, backend="numba")
            texts = [d.content or "" for d in stored]
            tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
            self.retriever.index(tokens, show_progress=False)
        else:
            self.retriever = bm25s.BM25.load(saved, mmap=True)
            self.retriever.backend = "numba"
        self.index_seconds = time.perf_counter() - start

    def rows(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """``tokenize`` + ``retrieve``: the best ``k`` rows and scores of each query."""
        tokens = bm25s.tokenize(queries, stopwords="en", stemmer=self.stemmer, show_progress=False, return_ids=False)
        found = self.retriever.retrieve(tokens, k=min(k, len(self.stored)), n_threads=1, show_progress=False)
        return found.documents, found.scores

    def search(self, queries: list[str], k: int) -> list[list[Document]]:
        """Each query's hits with a score (bm25s pads its k with zero-score rows, last) as Documents."""
        rows, scores = self.rows(queries, k)
        counts = (scores > 0).sum(axis=1).tolist()
        return documents_out(
            self.stored,
            [r[:c] for r, c in zip(rows.tolist(), counts, strict=True)],
            [s[:c] for s, c in zip(scores.tolist(), counts, strict=True)],
        )


def ours_index(corpus_path: Path, work: Path) -> tuple[Path, float]:
    """``needle index CORPUS --out DIR --no-dense --bm25``, timed (reading, tokenizing, building, saving)."""
    start = time.perf_counter()
    build_index(corpus_path, work / "index", model=DEFAULT_MODEL, overwrite=False, dense=False, bm25=True)
    return work / "index", time.perf_counter() - start


def searcher(index: Path, k: int) -> Searcher:
    """``Searcher(index, "bm25", k)`` on one thread (``n_threads: 1`` in its pipeline)."""
    found = Searcher(index, "bm25", k)
    retriever = found.pipeline.get_component("retriever")
    assert isinstance(retriever, BM25BatchRetriever)
    retriever.n_threads = 1
    return found


def speed_rows(
    name: str, queries: list[str], k: int, rounds: int, ours: Search, raw: RawBM25s, peers: dict[str, Search]
) -> list[dict[str, Any]]:
    """Single-query and batch rows at ``k``: ours against raw bm25s (the note: against its bare arrays), then the
    other engines, all timed in the same rounds."""

    def raw_documents(texts: list[str]) -> object:
        return raw.search(texts, k)

    def raw_arrays(texts: list[str]) -> object:
        return raw.rows(texts, k)

    found_rows, found_scores = raw.rows(queries, k)
    hits = [(r[s > 0].tolist(), s[s > 0].tolist()) for r, s in zip(found_rows, found_scores, strict=True)]

    def floor(texts: list[str]) -> object:
        return bare_documents(raw.stored, hits[: len(texts)])

    sides: list[Search] = [ours, raw_documents, raw_arrays, floor, *peers.values()]
    labels = {1: "raw bm25s (numba)", **dict(enumerate(peers, start=4))}
    rows = []
    for shape, run in (("single query", _each), (f"batch of {len(queries)}", _all)):
        times = rotating_rounds(rounds, [partial(run, side, queries) for side in sides])
        speed = [len(queries) / min(side) for side in times]
        for number, label in labels.items():
            note = f"best-of ratio x{speed[0] / speed[number]:.2f}"
            if number == 1:
                note += f"; vs raw bm25s returning its rows and scores only x{paired_ratio(times, 2):.2f}"
                note += f"; {floor_note(times, len(queries), sum(len(ids) for ids, _ in hits) / len(hits))}"
            row = _row(f"{shape}, top_k={k}, vs {label} ({name})", speed[0], speed[number],
                       paired_ratio(times, number), note)  # fmt: skip
            print(f"{row['benchmark']}: x{row['ratio']:.2f} ({note})", file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def bare_documents(stored: list[Document], hits: list[tuple[list[int], list[float]]]) -> list[list[Document]]:
    """The least any retriever with Documents out pays for these hits: per hit one new Document holding the stored
    fields and its score (no meta copy, no ``retrieval_type``), collector off. Timed beside the searches, it shows
    how close to raw bm25s' bare arrays a search returning Documents can come at all on this interpreter."""
    gc.disable()
    try:
        out = []
        for rows, scores in hits:
            documents = []
            for row, score in zip(rows, scores, strict=True):
                document = object.__new__(Document)
                fields = document.__dict__
                fields.update(stored[row].__dict__)
                fields["score"] = score
                documents.append(document)
            out.append(documents)
        return out
    finally:
        gc.enable()


def floor_note(times: list[list[float]], queries: int, per_query: float) -> str:
    """The note's last part: what the bare Documents of raw bm25s' hits cost a query, and the best ratio against its
    bare arrays a search returning Documents could reach (if its scoring were free: arrays / (arrays + floor))."""
    arrays, floor = min(times[2]) / queries, min(times[3]) / queries
    return (
        f"bare Documents for its {per_query:.0f} hits a query alone {floor * 1e6:.1f} µs "
        f"(raw arrays {arrays * 1e6:.1f} µs), so Documents out can reach at most x{arrays / (arrays + floor):.2f} "
        "against the arrays"
    )


def best_seconds(*actions: Callable[[], object], rounds: int = ROUNDS_IN_MEMORY) -> list[float]:
    """Fastest of ``rounds`` timed runs of each action, the actions taking turns within every round (also what
    ``bench_scale_bm25.py`` times with)."""
    times: list[list[float]] = [[] for _ in actions]
    for _ in range(rounds):
        for action, spent in zip(actions, times, strict=True):
            start = time.perf_counter()
            action()
            spent.append(time.perf_counter() - start)
    return [min(spent) for spent in times]


def _each(search: Search, queries: list[str]) -> None:
    for query in queries:
        search([query])


def _all(search: Search, queries: list[str]) -> None:
    search(queries)


def _row(benchmark: str, ours: float, peer: float, ratio: float, note: str, unit: str = "queries/s") -> dict[str, Any]:
    """One result row in the shape benchmarks/run.py collects."""
    return {"benchmark": benchmark, "ours": ours, "peer": peer, "unit": unit, "ratio": ratio, "note": note}


def same_top10(ours: Searcher, raw: RawBM25s, queries: list[str]) -> float:
    """The share of queries whose top 10 agree on both sides (``_agree``)."""
    pairs = zip(ours.search(queries), raw.search(queries, 10), strict=True)
    return sum(_agree(mine, theirs) for mine, theirs in pairs) / len(queries)


def _agree(mine: list[Document], theirs: list[Document]) -> bool:
    """The same scores rank by rank (to 5 digits) and the same ids above the last score: documents of equal score
    may come in either order, and a tie at the cut may keep either."""
    scores = [round(d.score or 0.0, 5) for d in mine]
    if scores != [round(d.score or 0.0, 5) for d in theirs]:
        return False
    if not scores:
        return True
    above = [{d.id for d, score in zip(hits, scores, strict=True) if score > scores[-1]} for hits in (mine, theirs)]
    return above[0] == above[1]


def in_memory_row(stored: list[Document], ours: Searcher, queries: list[str]) -> dict[str, Any]:
    """Our single queries against Haystack's pure-Python InMemoryBM25Retriever, on the first queries only."""
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    subset = queries[:IN_MEMORY_QUERIES]
    store = InMemoryDocumentStore()
    store.write_documents(stored)
    peer = InMemoryBM25Retriever(store, top_k=10)

    def peer_search(texts: list[str]) -> object:
        return [peer.run(query=text) for text in texts]

    ours_seconds, peer_seconds = best_seconds(lambda: _each(ours.search, subset), lambda: _each(peer_search, subset))
    return _row(f"single query, top_k=10 vs InMemoryBM25Retriever ({len(stored):,} passages)",
                len(subset) / ours_seconds, len(subset) / peer_seconds, peer_seconds / ours_seconds,
                f"first {len(subset)} queries, best of {ROUNDS_IN_MEMORY}; target >= 100x")  # fmt: skip


def run(size: str = "small") -> list[dict[str, Any]]:
    """Every row for ``size`` (``small``: about a minute; ``large``: 1M passages, many minutes)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}; got {size!r}")
    with tempfile.TemporaryDirectory(prefix="bench_bm25_") as tmp:
        work = Path(tmp)
        corpus_path, queries, name = corpus(size, work)
        index, ours_seconds = ours_index(corpus_path, work)
        stored = list(iter_corpus(corpus_path, title_in_content=True))
        saved = next(index.rglob("params.index.json")).parent if size == "large" else None
        raw = RawBM25s(stored, saved)
        peers = installed_peers(stored, work, print_note=lambda note: print(note, file=sys.stderr, flush=True))
        searchers = {k: searcher(index, k) for k in TOP_KS}
        print(f"same top 10 as raw bm25s: {same_top10(searchers[10], raw, queries):.1%} of queries", file=sys.stderr)
        rows = []
        if saved is None:
            note = "ours: needle index --no-dense --bm25 (reading, saving); raw: bm25s.tokenize + index in memory"
            rows.append(_row(f"index build ({name})", len(stored) / ours_seconds, len(stored) / raw.index_seconds,
                             raw.index_seconds / ours_seconds, note, "passages/s"))  # fmt: skip
        for k, found in searchers.items():
            bound = {peer: engine.bind(k) for peer, engine in peers.items()}
            rows += speed_rows(name, queries, k, SIZES[size][2], found.search, raw, bound)
        if size == "small":
            rows.append(in_memory_row(stored, searchers[10], queries))
        return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=list(SIZES), default="small")
    for result in run(parser.parse_args().size):
        print(
            f"{result['benchmark']:<70} ours {result['ours']:>11,.1f}  peer {result['peer']:>11,.1f} "
            f"{result['unit']:<10} ratio {result['ratio']:>6.2f}  {result['note']}"
        )
