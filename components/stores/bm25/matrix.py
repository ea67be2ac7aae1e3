"""Build a bm25s index from term ids without bm25s' per-document Python loop.

``bm25s.BM25.index`` counts each document's terms with a ``Counter`` and intersects sets document by
document: about a minute and a half per 100,000 passages on a small machine. We compute the same arrays —
document frequencies, IDF, the CSC weight matrix and (BM25L/BM25+) the non-occurrence weights — with the
numba kernels of ``components.stores.bm25.kernels`` in two linear passes over the term ids, and hand them to
a ``bm25s.BM25`` object, which saves, loads and scores them as if it had built them itself.

Each pass goes ``CHUNK`` documents per kernel call and reports each chunk done (``SaveProgress``), so a save
says how far its build is; a call costs microseconds, next to the tenth of a second a chunk takes.
"""

from collections.abc import Callable, Iterator

import bm25s
import numpy as np

from components.stores.bm25 import kernels
from components.stores.bm25 import scoring as bm25_scoring

SaveProgress = Callable[[str, int, int], None]
"""Called while a BM25 store saves as ``(stage, done, total)``: ``done`` of the ``total`` documents through the
stage named (e.g. ``"weighting terms"``); each stage is called with ``done`` 0 when it starts, ``total`` last."""
CHUNK = 100_000  # documents per kernel call


def quiet(stage: str, done: int, total: int) -> None:
    """A ``SaveProgress`` that reports nothing."""


def chunks(count: int) -> Iterator[tuple[int, int]]:
    """``(first, stop)`` of consecutive ranges of at most ``CHUNK`` of COUNT items."""
    for first in range(0, count, CHUNK):
        yield first, min(first + CHUNK, count)


def build_bm25(
    tokens: np.ndarray,
    offsets: np.ndarray,
    vocab: dict[str, int],
    method: str,
    k1: float,
    b: float,
    delta: float,
    report: SaveProgress = quiet,
) -> bm25s.BM25:
    """
    A bm25s index over documents ``tokens[offsets[i]:offsets[i + 1]]`` (term ids into ``vocab``, 0..len-1);
    REPORT hears its two passes, the ``counting terms`` and ``weighting terms`` stages.

    Equal to ``bm25s.BM25(method, k1, b, delta).index((token_lists, vocab))``: same formulas, same float64
    operations in the same order, weights stored as float32 (its IDF as float32 too, as bm25s keeps it).
    """
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n_docs, vocab_size = len(offsets) - 1, len(vocab)
    avgdl = float(np.diff(offsets).mean()) if n_docs else 1.0
    df = document_frequencies(tokens, offsets, vocab_size, report)
    idf = bm25_scoring.term_idf(method, df, n_docs)
    nonoccurrence = None
    if method in bm25_scoring.NONOCCURRENCE_METHODS:
        nonoccurrence = bm25_scoring.nonoccurrence(method, idf, k1, b, delta).astype(np.float32)
    indptr = np.zeros(vocab_size + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    data, indices = np.empty(indptr[-1], dtype=np.float32), np.empty(indptr[-1], dtype=np.int32)
    matrix = (data, indices, indptr[:-1].copy(), np.zeros(vocab_size, dtype=np.int64))
    scoring = (bm25_scoring.METHOD_CODES[method], float(k1), float(b), float(delta), avgdl)
    weights = (idf.astype(np.float32), np.zeros(0, dtype=np.float32) if nonoccurrence is None else nonoccurrence)
    report("weighting terms", 0, n_docs)
    for first, stop in chunks(n_docs):
        kernels.fill_weights(tokens, offsets, first, stop, *weights, scoring, matrix)
        report("weighting terms", stop, n_docs)
    bm25 = bm25s.BM25(method=method, k1=k1, b=b, delta=delta, backend="numpy")
    bm25.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}
    bm25.vocab_dict = dict(vocab)
    bm25.unique_token_ids_set = set(vocab.values())
    bm25.nonoccurrence_array = nonoccurrence
    return bm25


def document_frequencies(tokens: np.ndarray, offsets: np.ndarray, vocab_size: int, report: SaveProgress) -> np.ndarray:
    """How many of the documents (token ranges ``offsets[i]:offsets[i + 1]``) hold each term id, counted ``CHUNK``
    documents at a time (the ``counting terms`` stage)."""
    n_docs = len(offsets) - 1
    df = np.zeros(vocab_size, dtype=np.int64)
    last = np.full(vocab_size, -1, dtype=np.int64)
    report("counting terms", 0, n_docs)
    for first, stop in chunks(n_docs):
        kernels.count_documents(df, last, tokens, offsets, first, stop)
        report("counting terms", stop, n_docs)
    return df
