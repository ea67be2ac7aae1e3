"""Query scoring of a bm25s weight matrix with our cached numba kernels (the store's ``numba`` backend).

A search sums the weights of the query terms' columns into a per-thread buffer of one float per document and
keeps the best ``k`` with a heap, visiting only the rows those columns hold when they are few: its cost
follows the postings of the query terms, not the number of documents. One thread reuses its buffer from
query to query (the kernel leaves it zeroed). A batch on several threads is cut into contiguous parts run by
Python threads (the kernel releases the GIL), not by numba's parallel backend: OpenMP's spinning barrier
makes a parallel kernel several times slower than a serial one on a busy machine, and it needs no lock.
"""

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from components.stores.bm25 import kernels

Hits = tuple[np.ndarray, np.ndarray]
_NO_MASK = np.zeros(0, dtype=np.bool_)
_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The process' threads for batches split across cores (the kernel releases the GIL), started on first use."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="bm25-numba"))
        return _POOL[0]


class NumbaScorer:
    """Top-k search over one CSC weight matrix (``data``, ``indices``, ``indptr``, ``num_docs``)."""

    def __init__(self, scores: dict[str, Any]) -> None:
        """Keep the arrays of a built or loaded bm25s index (in memory, values checked: ``segment_files``); no copy."""
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
        :param n_threads: 0 or 1 for this thread, -1 for all cores, else that many threads.
        """
        lengths = np.fromiter(map(len, queries), dtype=np.int64, count=len(queries))
        pointers = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum(lengths, out=pointers[1:])
        flat = np.fromiter(itertools.chain.from_iterable(queries), dtype=np.int64, count=int(pointers[-1]))
        mask = _NO_MASK if accept is None else np.ascontiguousarray(accept, dtype=np.bool_)
        k = max(1, min(k, self.n_docs))
        bases, floors = bases_floors

        def serial(first: int, end: int) -> list[Hits]:
            scores, rows, counts = kernels.search_serial(
                self.data,
                self.indptr,
                self.indices,
                flat,
                pointers[first : end + 1],
                mask,
                bases[first:end],
                floors[first:end],
                self._buffer(),
                k,
            )
            return [(rows[i, :c], scores[i, :c]) for i, c in enumerate(counts.tolist())]

        threads = min((os.cpu_count() or 1) if n_threads == -1 else max(n_threads, 1), len(queries))
        if threads <= 1:
            return serial(0, len(queries))
        bounds = [len(queries) * part // threads for part in range(threads + 1)]
        parts = _pool().map(serial, bounds[:-1], bounds[1:])
        return [hits for part in parts for hits in part]

    def _buffer(self) -> np.ndarray:
        """This thread's score accumulator, one float per document (zeroed; the kernel leaves it so)."""
        buffer: np.ndarray | None = getattr(self._local, "buffer", None)
        if buffer is None:
            buffer = self._local.buffer = np.zeros(self.n_docs, dtype=np.float32)
        return buffer
