"""Query scoring of a bm25s weight matrix with our cached numba kernels (the store's ``numba`` backend).

A search sums the weights of the query terms' columns into a per-thread buffer of one float per document and
keeps the best ``k`` with a heap, visiting only the rows those columns hold when they are few: its cost
follows the postings of the query terms, not the number of documents. One thread reuses its buffer from
query to query (the kernel leaves it zeroed); the parallel kernel gives each of numba's threads its own.
"""

import os
import threading
from typing import Any

import numba
import numpy as np

from components.stores.bm25 import kernels

Hits = tuple[np.ndarray, np.ndarray]
_NO_MASK = np.zeros(0, dtype=np.bool_)
# Numba's fallback "workqueue" threading layer aborts the process if two threads launch parallel kernels at once.
_PARALLEL = threading.Lock()


class NumbaScorer:
    """Top-k search over one CSC weight matrix (``data``, ``indices``, ``indptr``, ``num_docs``)."""

    def __init__(self, scores: dict[str, Any]) -> None:
        """Keep the (possibly memory-mapped) arrays of a built or loaded bm25s index; nothing is copied."""
        self.data = scores["data"]
        self.indices = scores["indices"]
        self.indptr = scores["indptr"]
        self.n_docs = int(scores["num_docs"])
        self._local = threading.local()

    def search(
        self,
        queries: list[list[int]],
        k: int,
        accept: np.ndarray | None,
        bases_floors: tuple[np.ndarray, np.ndarray],
        n_threads: int = 0,
    ) -> list[Hits]:
        """
        Best ``k`` (rows, scores) per query (term ids), best first, equal scores by row.

        A row comes back only if ``accept`` (when given) is true for it and its score, ``bases`` (the score of a
        document without any query term) plus the weights of the terms it holds, is above ``floors``.
        :param n_threads: 0 or 1 for this thread, -1 for all cores, else that many of numba's threads.
        """
        lengths = np.fromiter((len(q) for q in queries), dtype=np.int64, count=len(queries))
        pointers = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum(lengths, out=pointers[1:])
        flat = np.fromiter((t for q in queries for t in q), dtype=np.int64, count=int(pointers[-1]))
        mask = _NO_MASK if accept is None else np.ascontiguousarray(accept, dtype=np.bool_)
        bases, floors = bases_floors
        k = max(1, min(k, self.n_docs))
        threads = (os.cpu_count() or 1) if n_threads == -1 else max(n_threads, 1)
        threads = min(threads, len(queries), numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
        if threads > 1:
            scores, rows, counts = self._parallel(flat, pointers, mask, bases, floors, k, threads)
        else:
            scores, rows, counts = kernels.search_serial(
                self.data, self.indptr, self.indices, flat, pointers, mask, bases, floors, self._buffer(), k
            )
        return [(rows[i, :c], scores[i, :c]) for i, c in enumerate(counts.tolist())]

    def _parallel(
        self,
        flat: np.ndarray,
        pointers: np.ndarray,
        mask: np.ndarray,
        bases: np.ndarray,
        floors: np.ndarray,
        k: int,
        threads: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Run the parallel kernel on ``threads`` of numba's threads, one launch at a time."""
        with _PARALLEL:
            previous = numba.get_num_threads()
            numba.set_num_threads(threads)
            try:
                return kernels.search_parallel(  # type: ignore[no-any-return]
                    self.data, self.indptr, self.indices, flat, pointers, mask, bases, floors, self.n_docs, k, threads
                )
            finally:
                numba.set_num_threads(previous)

    def _buffer(self) -> np.ndarray:
        """This thread's score accumulator, one float per document (zeroed; the kernel leaves it so)."""
        buffer: np.ndarray | None = getattr(self._local, "buffer", None)
        if buffer is None:
            buffer = self._local.buffer = np.zeros(self.n_docs, dtype=np.float32)
        return buffer
