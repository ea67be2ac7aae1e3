"""End-to-end query speed: ``needle.search.Searcher`` (the YAML pipelines) vs the raw libraries doing the same work.

Ours: an index built by ``needle.indexing.build_index`` (dense + BM25) in a temporary directory, searched through
``Searcher`` in each mode. Raw: the same model loaded by sentence-transformers (``encode``), a faiss
``IndexFlatIP`` over the index's own embeddings, bm25s with the same settings, tokenizer and scoring backend as
our store, and a Python list of (id, content); hybrid and rrf raw run both searches (100 candidates each) and the
same fusion math in numpy. Both sides return, per query, the top_k documents as id, content and score.

Models and indexes load before timing. Single queries: each query alone, ours and raw back to back with the order
alternating, per-query median latency; batch: all queries in one call, queries/s. Every figure is the best of
rounds on each side (others share this machine). Rows are in queries/s (a single query: 1 / its median latency),
so the ratio ours / raw is a speed ratio: >= 1 means we are as fast; the goal is >= 0.9.

BM25 also runs against a second raw peer that returns Haystack Documents (built the cheapest way: the stored
fields copied into a new object with the score and its own meta, no ``__init__``) instead of dicts: a hit as a
Document costs 1.5-2 µs where a 3-key dict costs 0.3-0.6, which at top_k 100 is more than the search. Those rows
show what is ours beyond the Document every Haystack retriever returns.

Data: SciFact (``../shared/data/scifact``, read in place, never copied) when present, else a generated corpus.
``small``: 300 passages cut to their first 40 words, 30 queries; ``large``: all 5,183 full passages, 300 queries.

    .venv/bin/python benchmarks/bench_end_to_end.py [--size small|large]
"""

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bm25s
import faiss
import numpy as np
from haystack import Document
from sentence_transformers import SentenceTransformer

from components.embedders.model_resolver import resolve_model
from needle.index_dir import DEFAULT_MODEL
from needle.indexing import build_index
from needle.search import Searcher

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
SIZES = {"small": (300, 30, 40, 3), "large": (5183, 300, 0, 3)}  # passages, queries, words kept (0: all), rounds
MODES = ("dense", "bm25", "hybrid", "rrf")
TOP_KS = (10, 100)
CANDIDATES = 100  # what the hybrid and rrf pipelines fetch from each side
RRF_K = 61
Hits = list[dict[str, Any]]


def corpus_and_queries(passages: int, queries: int, words: int) -> tuple[list[dict[str, str]], list[str]]:
    """SciFact passages and queries when present, else generated text; passages cut to ``words`` words (0: all)."""
    if (SCIFACT / "corpus.jsonl").exists():
        with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as lines:
            rows = [json.loads(line) for _, line in zip(range(passages), lines, strict=False)]
        with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as lines:
            texts = [json.loads(line)["text"] for _, line in zip(range(queries), lines, strict=False)]
        docs = [{"id": str(r["_id"]), "title": r.get("title", ""), "text": r["text"]} for r in rows]
    else:
        rng = random.Random(0)
        vocabulary = [f"term{i}" for i in range(3000)]
        docs = [{"id": f"d{i}", "title": "", "text": " ".join(rng.choices(vocabulary, k=120))} for i in range(passages)]
        texts = [" ".join(rng.choices(vocabulary, k=8)) for _ in range(queries)]
    if words:
        for doc in docs:
            doc["text"] = " ".join(doc["text"].split()[:words])
    return docs, texts


class Raw:
    """The raw libraries over the same corpus, vectors and BM25 settings as our index."""

    def __init__(self, index_dir: Path, docs: list[dict[str, str]], settings: dict[str, Any], backend: str) -> None:
        generation = next(index_dir.glob("gen-*[0-9]"))
        self.model = SentenceTransformer(resolve_model(DEFAULT_MODEL))
        vectors = np.load(generation / "embeddings.npy")
        self.index = faiss.IndexFlatIP(vectors.shape[1])
        self.index.add(vectors)
        self.docs = [(d["id"], d["text"]) for d in docs]
        self.stored = [Document(id=d["id"], content=d["text"], meta={"title": d["title"]}) for d in docs]
        self.stemmer = __import__("Stemmer").Stemmer("english")
        tokens = bm25s.tokenize([d["text"] for d in docs], stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.bm25 = bm25s.BM25(method=settings["method"], k1=settings["k1"], b=settings["b"], backend=backend)
        self.bm25.index(tokens, show_progress=False)

    def _hits(self, rows: np.ndarray, scores: np.ndarray) -> Hits:
        docs = self.docs
        return [
            {"id": docs[r][0], "content": docs[r][1], "score": float(s)}
            for r, s in zip(rows, scores, strict=False)
            if r >= 0
        ]

    def documents(self, queries: list[str], k: int) -> list[list[Document]]:
        """BM25 top-k hits as new Haystack Documents (stored fields, score, own meta) instead of dicts."""
        found = []
        for rows, scores in zip(*self._bm25(queries, k), strict=True):
            hits = []
            for row, score in zip(rows[scores > 0].tolist(), scores[scores > 0].tolist(), strict=True):
                base = self.stored[row]
                hit = object.__new__(Document)
                hit.__dict__.update(base.__dict__, score=score, meta={**base.meta, "retrieval_type": "sparse"})
                hits.append(hit)
            found.append(hits)
        return found

    def _dense(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        vectors = self.model.encode(queries, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        scores, rows = self.index.search(vectors, k)
        return rows, scores

    def _bm25(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        tokens = bm25s.tokenize(queries, stopwords="en", stemmer=self.stemmer, show_progress=False)
        k = min(k, len(self.docs))
        rows, scores = self.bm25.retrieve(tokens, k=k, show_progress=False, n_threads=-1 if len(queries) > 1 else 0)
        return rows, scores

    def search(self, mode: str, queries: list[str], k: int) -> list[Hits]:
        """Top-k hits per query, as dicts of id, content and score."""
        if mode == "dense":
            return [self._hits(r, s) for r, s in zip(*self._dense(queries, k), strict=True)]
        if mode == "bm25":
            return [self._hits(r[s > 0], s[s > 0]) for r, s in zip(*self._bm25(queries, k), strict=True)]
        n = max(k, CANDIDATES)
        dense, sparse = self._dense(queries, n), self._bm25(queries, n)
        fuse = self._mix if mode == "hybrid" else self._rrf
        return [fuse(q, dense[0][i], dense[1][i], sparse[0][i], sparse[1][i], k) for i, q in enumerate(queries)]

    def _mix(self, query: str, d_rows: np.ndarray, d_scores: np.ndarray, s_rows: np.ndarray, s_scores: np.ndarray,
             k: int) -> Hits:  # fmt: skip
        """Min-max per side, dense weight by query length, merged by row (the mix ranker's math)."""
        w = 0.4 + 0.3 / (1 + np.exp(-(len(query) - 6.0)))
        keep = s_scores > 0
        s_rows, s_scores = s_rows[keep], s_scores[keep]
        fused = np.zeros(len(self.docs))
        for rows, scores, weight in ((d_rows, d_scores, w), (s_rows, s_scores, 1 - w)):
            if len(scores):
                span = scores.max() - scores.min()
                fused[rows] += weight * ((scores - scores.min()) / span if span else 0.0)
        rows = np.unique(np.concatenate([d_rows, s_rows]))
        best = rows[np.argsort(-fused[rows], kind="stable")[:k]]
        return self._hits(best, fused[best])

    def _rrf(self, query: str, d_rows: np.ndarray, d_scores: np.ndarray, s_rows: np.ndarray, s_scores: np.ndarray,
             k: int) -> Hits:  # fmt: skip
        """Reciprocal rank fusion with k = 61 over both lists (DocumentJoiner's math)."""
        s_rows = s_rows[s_scores > 0]
        fused = np.zeros(len(self.docs))
        for rows in (d_rows, s_rows):
            fused[rows] += 1.0 / (RRF_K + np.arange(len(rows)))
        rows = np.unique(np.concatenate([d_rows, s_rows]))
        best = rows[np.argsort(-fused[rows], kind="stable")[:k]]
        return self._hits(best, fused[best] * RRF_K)


def best_single(rounds: int, ours: Callable[[str], object], raw: Callable[[str], object], queries: list[str]) -> tuple:
    """Per-query median latency of each side (each query alone, sides back to back, order alternating), best round."""
    ours(queries[0]), raw(queries[0])
    best = [float("inf"), float("inf")]
    for round_number in range(rounds):
        times: list[list[float]] = [[], []]
        for i, query in enumerate(queries):
            pair = [(0, ours), (1, raw)]
            for side, fn in pair if (i + round_number) % 2 == 0 else pair[::-1]:
                start = time.perf_counter()
                fn(query)
                times[side].append(time.perf_counter() - start)
        best = [min(best[side], statistics.median(times[side])) for side in (0, 1)]
    return best[0], best[1]


def best_batch(rounds: int, ours: Callable[[], object], raw: Callable[[], object]) -> tuple[float, float]:
    """Wall time of one call on each side, ABBA order, best of ``rounds``."""
    ours(), raw()
    best = [float("inf"), float("inf")]
    for round_number in range(rounds):
        pair = [(0, ours), (1, raw)]
        for side, fn in pair if round_number % 2 == 0 else pair[::-1]:
            start = time.perf_counter()
            fn()
            best[side] = min(best[side], time.perf_counter() - start)
    return best[0], best[1]


def row(benchmark: str, ours_seconds: float, raw_seconds: float, queries: int, note: str) -> dict[str, Any]:
    """One benchmarks/run.py row in queries/s (a single query: 1 / its median latency); ratio = ours / raw."""
    ours, raw = queries / ours_seconds, queries / raw_seconds
    return {"benchmark": benchmark, "ours": ours, "peer": raw, "unit": "queries/s", "ratio": ours / raw, "note": note}


def documents_floor(
    searcher: Searcher, raw: Raw, queries: list[str], k: int, rounds: int, shape: str
) -> list[dict[str, Any]]:
    """BM25 single and batch rows against raw bm25s returning Haystack Documents (``Raw.documents``)."""
    ours_1, raw_1 = best_single(rounds, lambda q: searcher.search([q]), lambda q: raw.documents([q], k), queries)
    ours_n, raw_n = best_batch(rounds, lambda: searcher.search(queries), lambda: raw.documents(queries, k))
    note = "raw side returns Haystack Documents, not dicts"
    return [
        row(f"bm25 single query vs raw + Documents ({shape})", ours_1, raw_1, 1, note),
        row(f"bm25 batch of {len(queries)} vs raw + Documents ({shape})", ours_n, raw_n, len(queries), note),
    ]


def run(size: str = "small") -> list[dict[str, Any]]:
    """Time every mode, single and batch, top_k 10 and 100, ours against the raw libraries."""
    passages, query_count, words, rounds = SIZES[size]
    docs, queries = corpus_and_queries(passages, query_count, words)
    with tempfile.TemporaryDirectory(prefix="needle-bench-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        corpus.write_text("".join(json.dumps({"id": d["id"], "title": d["title"], "contents": d["text"]}) + "\n"
                                  for d in docs), encoding="utf-8")  # fmt: skip
        index_dir = Path(tmp) / "index"
        build_index(corpus, index_dir, model=DEFAULT_MODEL, overwrite=False, bm25=True)
        searchers = {(mode, k): Searcher(index_dir, mode, k) for mode in MODES for k in TOP_KS}
        store = searchers["bm25", 10].pipeline.get_component("retriever").document_store
        raw = Raw(index_dir, docs, store.settings, store.backend)
        rows = []
        for (mode, k), searcher in searchers.items():
            ours_1, raw_1 = best_single(
                rounds, lambda q, s=searcher: s.search([q]), lambda q, m=mode, k=k: raw.search(m, [q], k), queries
            )
            ours_n, raw_n = best_batch(
                rounds, lambda s=searcher: s.search(queries), lambda m=mode, k=k: raw.search(m, queries, k)
            )
            shape = f"{len(docs):,} passages, top_k={k}"
            note = f"BM25 backend {store.backend}" if mode != "dense" else "sentence-transformers + faiss Flat IP"
            note_1 = f"{note}; median latency ours {ours_1 * 1e3:.2f} ms, raw {raw_1 * 1e3:.2f} ms"
            rows.append(row(f"{mode} single query ({shape})", ours_1, raw_1, 1, note_1))
            rows.append(row(f"{mode} batch of {len(queries)} ({shape})", ours_n, raw_n, len(queries), note))
            if mode == "bm25":
                rows += documents_floor(searcher, raw, queries, k, rounds, shape)
            for done in rows[-2:]:  # progress: a full run takes minutes on a busy machine
                print(f"{done['benchmark']}: x{done['ratio']:.2f}", file=sys.stderr, flush=True)
        return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    print("| benchmark | ours | raw | unit | ours / raw (>= 1: as fast) | note |\n|---|---|---|---|---|---|")
    for result in run(parser.parse_args().size):
        print(f"| {result['benchmark']} | {result['ours']:,.1f} | {result['peer']:,.1f} | {result['unit']} | "
              f"{result['ratio']:.2f} | {result['note']} |")  # fmt: skip
