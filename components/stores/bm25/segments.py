"""The two segments of a BM25 index: a main segment built by bm25s and a small delta segment.

bm25s precomputes every (document, term) weight into a sparse matrix, so it can neither add nor delete a
document in place. The main segment is such a bm25s index, built once over many documents; it also keeps
each row's term ids so that a later rebuild (compaction) needs neither the texts nor the tokenizer. Documents
written after that build go to the delta segment, which we score ourselves (``bm25_scoring``) with the
statistics of main + delta, and which is cheap to rebuild because it stays a small fraction of the main one.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import bm25s
import numpy as np

from components.stores.bm25 import scoring as bm25_scoring
from components.stores.bm25.matrix import SaveProgress, build_bm25, quiet
from components.stores.bm25.numba_search import NumbaScorer

# A main-segment hit must beat the score of a document that matches no query term (zero, except for
# BM25L/BM25+ whose missing terms still weigh something) by this relative margin, to absorb float32 rounding.
_FLOOR_MARGIN = 1e-6

Hits = tuple[np.ndarray, np.ndarray]
"""Row numbers within a segment and their scores, best first."""
NO_HITS: Hits = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))


class SearchableMain(Protocol):
    """What a search asks of the main segment of a snapshot (``IndexSnapshot``): a ``MainSegment``, or one tenant's
    rows of it (``tenant_segments.TenantView``), numbered among those rows."""

    @property
    def ids(self) -> list[str]:
        """The document id of each row."""

    @property
    def n_docs(self) -> int:
        """Number of rows."""

    def search(self, queries: list[list[int]], k: int, accept: np.ndarray | None, n_threads: int) -> list[Hits]:
        """Top ``k`` rows for each query (term ids), best first; rows where ``accept`` is false never come back."""


@dataclass(frozen=True)
class BM25Params:
    """The bm25s scoring settings an index is built with; they are baked into its weights."""

    method: str = "lucene"
    k1: float = 0.9
    b: float = 0.4
    delta: float = 0.5
    backend: str = "numba"


class MainSegment:
    """Documents indexed by one bm25s build: fixed rows, built here or read from a saved index."""

    def __init__(
        self, bm25: bm25s.BM25, ids: list[str], tokens: np.ndarray | Callable[[], np.ndarray], offsets: np.ndarray
    ) -> None:
        """Wrap a built or loaded bm25s index with the document id and term ids of each of its rows.

        :param tokens: the term ids, or (a loaded segment) a function that reads and checks them on first use:
            searches never need them, compactions and saves do (``components.stores.bm25.segment_files``).
        """
        self.bm25 = bm25
        self.ids = ids
        self._tokens = tokens if isinstance(tokens, np.ndarray) else None
        self._read_tokens = None if isinstance(tokens, np.ndarray) else tokens
        self.offsets = offsets
        indptr = bm25.scores["indptr"]
        self.vocab_size = len(indptr) - 1
        self.doc_freq = np.diff(np.asarray(indptr)).astype(np.int64)
        self.total_length = int(offsets[-1])
        self._numba = NumbaScorer(bm25.scores)

    @classmethod
    def build(
        cls,
        ids: list[str],
        tokens: np.ndarray,
        offsets: np.ndarray,
        vocab: dict[str, int],
        params: BM25Params,
        report: SaveProgress = quiet,
    ) -> "MainSegment":
        """
        Build the index over documents ``tokens[offsets[i]:offsets[i + 1]]`` (term ids into ``vocab``, 0..len-1).

        The weights are those bm25s computes (``components.stores.bm25.matrix``), built in two linear passes that
        REPORT hears; ``backend`` only selects how queries are scored.
        """
        tokens = np.ascontiguousarray(tokens, dtype=np.int32)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        # bm25s keeps (and saves) the vocabulary it is given: a copy, since the store's own grows with new writes
        bm25 = build_bm25(tokens, offsets, vocab, params.method, params.k1, params.b, params.delta, report)
        bm25.backend = params.backend
        return cls(bm25, list(ids), tokens, offsets)

    @property
    def tokens(self) -> np.ndarray:
        """Every row's term ids, concatenated (row i: ``tokens[offsets[i]:offsets[i + 1]]``)."""
        if self._tokens is None:
            assert self._read_tokens is not None
            self._tokens = self._read_tokens()
        return self._tokens

    @property
    def n_docs(self) -> int:
        """Number of rows, deleted ones included (they keep counting in the statistics until compaction)."""
        return len(self.ids)

    def search(self, queries: list[list[int]], k: int, accept: np.ndarray | None, n_threads: int) -> list[Hits]:
        """Top ``k`` rows for each query (term ids), best first; rows where ``accept`` is false never come back."""
        known = [[t for t in q if t < self.vocab_size] for q in queries]
        if not any(known):
            return [NO_HITS] * len(queries)
        if self.bm25.backend == "numba":
            return self._numba.search(known, k, accept, self.floor_base(known), n_threads)
        return self._bm25s_search(known, k, accept, n_threads)

    def _bm25s_search(self, known: list[list[int]], k: int, accept: np.ndarray | None, n_threads: int) -> list[Hits]:
        """bm25s' own (numpy) scorer, in one call for the queries with a known term."""
        hits = [NO_HITS] * len(known)
        asked = [i for i, q in enumerate(known) if q]
        rows, scores = self.bm25.retrieve(
            [known[i] for i in asked],
            k=min(k, self.n_docs),
            weight_mask=None if accept is None else accept.astype(np.float32),
            n_threads=n_threads,
            show_progress=False,
            return_as="tuple",
        )
        keep = scores > self._floors([known[i] for i in asked])[:, None]
        for j, i in enumerate(asked):
            hits[i] = (rows[j][keep[j]], scores[j][keep[j]])
        return hits

    def floor_base(self, queries: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Per query, the score of a document without any query term (``base``) and the score a hit must beat."""
        nonoccurrence = self.bm25.nonoccurrence_array
        if nonoccurrence is None:
            zeros = np.zeros(len(queries), dtype=np.float32)
            return zeros, zeros
        bases = np.array([nonoccurrence[q].sum() for q in queries], dtype=np.float32)
        return bases, bases + _FLOOR_MARGIN * np.abs(bases)

    def _floors(self, queries: list[list[int]]) -> np.ndarray:
        """Per query, the score a hit must beat: that of a document without any query term, plus rounding."""
        return self.floor_base(queries)[1]

    def save(self, directory: Path, report: SaveProgress = quiet) -> None:
        """Write the bm25s files, the row ids and the term ids of each row into ``directory`` (the ``writing the
        index`` stage, which REPORT hears when it starts and when it ends)."""
        report("writing the index", 0, self.n_docs)
        self.bm25.save(directory, show_progress=False)
        (directory / "ids.json").write_text(json.dumps(self.ids, ensure_ascii=False), encoding="utf-8")
        np.save(directory / "tokens.npy", np.asarray(self.tokens))
        np.save(directory / "token_offsets.npy", np.asarray(self.offsets))
        report("writing the index", self.n_docs, self.n_docs)


class DeltaSegment:
    """Documents written since the main build, scored with the statistics of main + delta together."""

    def __init__(
        self,
        ids: list[str],
        token_lists: list[np.ndarray],
        main: MainSegment | None,
        vocab_size: int,
        params: BM25Params,
    ) -> None:
        """Compute the delta's sparse weight matrix (column = term) once; queries then only add columns."""
        self.ids = ids
        self.vocab_size = vocab_size
        lengths = np.array([len(t) for t in token_lists], dtype=np.int64)
        flat = np.concatenate(token_lists).astype(np.int64) if token_lists else np.zeros(0, dtype=np.int64)
        width = max(vocab_size, 1)
        pairs, tf = np.unique(np.repeat(np.arange(len(ids)), lengths) * width + flat, return_counts=True)
        rows, terms = pairs // width, pairs % width
        n_docs, df, total = self._collection_stats(main, terms, lengths, vocab_size)
        term_idf = bm25_scoring.term_idf(params.method, df, n_docs)
        self.nonoccurrence = bm25_scoring.nonoccurrence(params.method, term_idf, params.k1, params.b, params.delta)
        avgdl = total / n_docs if total else 1.0
        doc_lengths = lengths[rows].astype(np.float64)
        term_weights = bm25_scoring.tfc(
            params.method, tf.astype(np.float64), doc_lengths, avgdl, params.k1, params.b, params.delta
        )
        weights = term_idf[terms] * term_weights - self.nonoccurrence[terms]
        order = np.argsort(terms, kind="stable")
        self.data = weights[order].astype(np.float32)
        self.rows = rows[order]
        self.indptr = np.zeros(vocab_size + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=vocab_size), out=self.indptr[1:])

    @staticmethod
    def _collection_stats(
        main: MainSegment | None, terms: np.ndarray, lengths: np.ndarray, vocab_size: int
    ) -> tuple[int, np.ndarray, int]:
        """Document count, per-term document frequency and total length over main + delta."""
        df = np.bincount(terms, minlength=vocab_size).astype(np.int64)
        n_docs, total = len(lengths), int(lengths.sum())
        if main is not None:
            df[: main.vocab_size] += main.doc_freq
            n_docs += main.n_docs
            total += main.total_length
        return n_docs, df, total

    def search(self, queries: list[list[int]], k: int, mask: np.ndarray | None) -> list[Hits]:
        """Top ``k`` rows for each query (term ids) among rows where ``mask`` is true; non-matching rows never."""
        arrays = [np.array(q, dtype=np.int64) for q in queries]
        return [self._search_one(q[q < self.vocab_size], k, mask) for q in arrays]

    def _search_one(self, query: np.ndarray, k: int, mask: np.ndarray | None) -> Hits:
        """Sum the query terms' columns, keep matching rows, and select the best ``k``."""
        starts, ends = self.indptr[query], self.indptr[query + 1]
        postings = np.concatenate(
            [np.arange(s, e) for s, e in zip(starts, ends, strict=True)] or [np.zeros(0, dtype=np.int64)]
        )
        matched = np.bincount(self.rows[postings], weights=self.data[postings], minlength=len(self.ids))
        candidates = np.flatnonzero(matched > 0)
        if mask is not None:
            candidates = candidates[mask[candidates]]
        scores = (matched[candidates] + float(self.nonoccurrence[query].sum())).astype(np.float32)
        if len(candidates) > k:
            best = np.argpartition(-scores, k - 1)[:k]
            candidates, scores = candidates[best], scores[best]
        order = np.argsort(-scores, kind="stable")
        return candidates[order], scores[order]
