"""Numba kernels of the BM25 store: build the weight matrix, and score + select the top k of queries.

Why our own kernels rather than bm25s' numba functions: bm25s compiles them in every new process (seconds to
tens of seconds on a small machine) because they are not cached; it scores every document for every query
(an array of ``num_docs`` zeroed, then scanned for the top k); and its index build counts terms document by
document in Python. Ours are compiled with ``cache=True``, so a process after the first loads them from disk
(numba keeps the cache in ``__pycache__`` beside this file, or under the user's cache directory when that is
read-only, or in ``NUMBA_CACHE_DIR`` when set; with no writable place they are compiled per process, as
bm25s' are); they only visit the rows a query term occurs in; and the build is two linear passes.

A query's best ``k`` hits come from a heap for a small ``k``; for a large one, from the rows above a score
threshold found by bisection in vectorised counting passes (``_best_by_threshold``): on SciFact at top_k 100 a
query then costs 20 µs instead of 34.

Results are those of bm25s: weights are computed with its formulas in its operation order (float64, stored as
float32), and a query's scores are summed term by term in float32, as its scorer does. Equal scores are ranked
by row, lowest first, so both backends and every thread count give the same order.
"""

import numpy as np

from components.stores.bm25.jit import cached_jit as _jit
from components.stores.bm25.scoring import tfc_kernel as _tfc


@_jit(nogil=True)
def count_documents(
    df: np.ndarray, last: np.ndarray, tokens: np.ndarray, offsets: np.ndarray, first: int, stop: int
) -> None:
    """
    Add to ``df`` (per term id) documents ``first`` to ``stop - 1`` (token ranges ``offsets[i]:offsets[i + 1]``)
    that hold the term. ``last`` (-1 for every term at first) keeps the last document counted per term, so
    calls over consecutive ranges count what one call over all of them would.
    """
    for doc in range(first, stop):
        for j in range(offsets[doc], offsets[doc + 1]):
            term = tokens[j]
            if last[term] != doc:
                last[term] = doc
                df[term] += 1


@_jit(nogil=True)
def fill_weights(
    tokens: np.ndarray,
    offsets: np.ndarray,
    first: int,
    stop: int,
    idf: np.ndarray,
    nonoccurrence: np.ndarray,
    scoring: tuple[int, float, float, float, float],
    matrix: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """
    Write the weights of documents ``first`` to ``stop - 1`` into the (term x document) CSC ``matrix`` of bm25s.

    ``scoring``: ``(method code, k1, b, delta, avgdl)``. ``matrix``: ``(data, indices, heads, tf)``: the CSC
    arrays sized by the document frequencies, each column's next free slot (its ``indptr`` start at first) and a
    zeroed per-term count; calls over consecutive ranges fill what one call over all of them would, rows
    ascending within each column.
    """
    method, k1, b, delta, avgdl = scoring
    data, indices, heads, tf = matrix
    subtract = len(nonoccurrence) > 0
    for doc in range(first, stop):
        start, end = offsets[doc], offsets[doc + 1]
        for j in range(start, end):
            tf[tokens[j]] += 1
        dl = float(end - start)
        for j in range(start, end):
            term = tokens[j]
            if tf[term] == 0:  # second occurrence: already written
                continue
            weight = float(idf[term]) * _tfc(method, float(tf[term]), dl, avgdl, k1, b, delta)
            if subtract:
                weight -= float(nonoccurrence[term])
            data[heads[term]] = weight
            indices[heads[term]] = doc
            heads[term] += 1
            tf[term] = 0


@_jit(nogil=True, inline="always")
def _worse(score_a: float, row_a: int, score_b: float, row_b: int) -> bool:
    """Whether hit a ranks after hit b: a lower score, or an equal one on a later row."""
    return score_a < score_b or (score_a == score_b and row_a > row_b)


@_jit(nogil=True)
def _sift_down(scores: np.ndarray, rows: np.ndarray, size: int, pos: int) -> None:
    """Restore the heap (worst hit at the root) below ``pos``."""
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        if child + 1 < size and _worse(scores[child + 1], rows[child + 1], scores[child], rows[child]):
            child += 1
        if not _worse(scores[child], rows[child], scores[pos], rows[pos]):
            return
        scores[pos], scores[child] = scores[child], scores[pos]
        rows[pos], rows[child] = rows[child], rows[pos]
        pos = child


@_jit(nogil=True, inline="always")
def _enters(scores: np.ndarray, rows: np.ndarray, size: int, score: float, row: int) -> bool:
    """Whether a hit belongs among the best ``len(scores)`` kept so far (checked before calling ``_offer``)."""
    return size < len(scores) or score > scores[0] or (score == scores[0] and row < rows[0])


@_jit(nogil=True)
def _offer(scores: np.ndarray, rows: np.ndarray, size: int, score: float, row: int) -> int:
    """Put a hit into the heap of the best ``len(scores)`` (worst at the root); returns the new size."""
    if size < len(scores):
        scores[size], rows[size] = score, row
        pos = size
        while pos > 0:  # sift the new hit up while it is worse than its parent
            parent = (pos - 1) >> 1
            if not _worse(scores[pos], rows[pos], scores[parent], rows[parent]):
                break
            scores[pos], scores[parent] = scores[parent], scores[pos]
            rows[pos], rows[parent] = rows[parent], rows[pos]
            pos = parent
        return size + 1
    scores[0], rows[0] = score, row  # replaces the worst kept (``_enters`` said it is better)
    _sift_down(scores, rows, size, 0)
    return size


HEAP_K = 32
"""Up to this ``k`` a heap picks the best rows of a dense scan; above it ``_best_by_threshold`` does, faster."""
_FEW = 256  # a threshold that at most max(4 * k, _FEW) rows beat is close enough
_STEPS = 24  # bisection steps at most (float32 scores: about a part in 10 million of the range)
_SIGN = np.uint32(0x80000000)


@_jit(nogil=True)
def _keys(scores: np.ndarray, rows: np.ndarray, m: int) -> np.ndarray:
    """One int64 per hit that orders hits as the ranking does (a larger key ranks first): the score's float32 bits
    made order-preserving in the high bits, the row reversed in the low 31 (equal scores: the lower row first;
    rows are below 2**31, bm25s' indices being int32)."""
    bits = scores[:m].view(np.uint32)
    keys = np.empty(m, dtype=np.int64)
    for i in range(m):
        u = bits[i]
        u = ~u if u & _SIGN else u | _SIGN
        keys[i] = np.int64((np.uint64(u) << np.uint64(31)) | np.uint64(0x7FFFFFFF - rows[i]))
    return keys


@_jit(nogil=True)
def _best_first(scores: np.ndarray, rows: np.ndarray, m: int, out_scores: np.ndarray, out_rows: np.ndarray) -> int:
    """The best ``len(out_scores)`` of ``m`` candidate hits (all, when fewer), best first, into ``out_*``."""
    k = len(out_scores)
    keys = _keys(scores, rows, m)
    if m > k:
        kth = np.partition(keys, m - k)[m - k]
        kept = 0
        for i in range(m):
            if keys[i] >= kth:
                keys[kept], scores[kept], rows[kept] = keys[i], scores[i], rows[i]
                kept += 1
        m = kept
    order = np.argsort(keys[:m])
    for i in range(m):
        out_scores[i], out_rows[i] = scores[order[m - 1 - i]], rows[order[m - 1 - i]]
    return m


@_jit(nogil=True)
def _count_above(acc: np.ndarray, base: np.float32, t: np.float32, mask: np.ndarray) -> int:
    """How many rows (accepted by ``mask``, when one is given) score above ``t``: branch-free, so vectorised."""
    count = 0
    if len(mask) > 0:
        for row in range(len(acc)):
            count += (acc[row] + base > t) & mask[row]
    else:
        for row in range(len(acc)):
            count += acc[row] + base > t
    return count


@_jit(nogil=True, fastmath=True)
def _highest(acc: np.ndarray, base: np.float32) -> np.float32:
    """The highest score, over eight lanes (a plain running maximum is not vectorised)."""
    lanes = np.full(8, -np.inf, dtype=np.float32)
    whole = len(acc) // 8 * 8
    for row in range(0, whole, 8):
        for lane in range(8):
            value = acc[row + lane]
            lanes[lane] = value if value > lanes[lane] else lanes[lane]
    high = lanes.max()
    for row in range(whole, len(acc)):
        high = max(high, acc[row])
    return np.float32(high + base)


@_jit(nogil=True)
def _threshold(
    acc: np.ndarray, base: np.float32, floor: np.float32, mask: np.ndarray, k: int
) -> tuple[np.float32, int]:
    """
    A score ``t`` >= ``floor`` that at least ``k`` rows beat, or ``floor`` itself when fewer do, and how many beat
    it: bisection between ``floor`` and the highest score, counting in vectorised passes, until few enough do.
    Every hit of the best ``k`` beats it, since at least ``k`` rows do.
    """
    few = max(4 * k, _FEW)
    low, count = floor, int(_count_above(acc, base, floor, mask))
    if count <= few:
        return low, count
    high = _highest(acc, base)
    for _ in range(_STEPS):
        middle = np.float32((np.float64(low) + np.float64(high)) / 2)
        if middle <= low or middle >= high:
            break
        above = int(_count_above(acc, base, middle, mask))
        if above < k:
            high = middle
            continue
        low, count = middle, above
        if above <= few:
            break
    return low, count


@_jit(nogil=True)
def _best_by_threshold(
    acc: np.ndarray, base: np.float32, floor: np.float32, mask: np.ndarray, out_scores: np.ndarray, out_rows: np.ndarray
) -> int:
    """
    A dense scan's best hits for a large ``k``: find a score few rows beat but at least ``k`` do (``_threshold``),
    collect those rows in one pass and select among them. A heap instead replaces its worst hit some
    k * ln(rows / k) times, each a walk down the heap of unpredictable branches: twice as slow at k = 100.
    Zeroes ``acc``.
    """
    t, count = _threshold(acc, base, floor, mask, len(out_scores))
    scores, rows = np.empty(count, dtype=np.float32), np.empty(count, dtype=np.int64)
    use_mask, m = len(mask) > 0, 0
    for row in range(len(acc)):
        score = acc[row] + base
        if score > t and not (use_mask and not mask[row]):
            scores[m], rows[m] = score, row
            m += 1
    acc[:] = 0
    kept: int = _best_first(scores, rows, m, out_scores, out_rows)
    return kept


@_jit(nogil=True)
def _one_query(
    data: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    query: np.ndarray,
    mask: np.ndarray,
    base: np.float32,
    floor: np.float32,
    acc: np.ndarray,
    out_scores: np.ndarray,
    out_rows: np.ndarray,
) -> int:
    """
    Best hits of one query into ``out_*`` (best first); returns how many. ``acc`` must be zeroed; it is left so.

    A row the query's terms do not reach keeps ``acc`` 0, and so does one whose weights sum to 0: neither can
    beat ``floor`` (>= ``base``), since weights are never negative. So the second pass visits each reached row
    once by zeroing it as it goes, over the postings again, into a heap of the best; or, when the postings
    outnumber a quarter of the rows, scans every row (sequential reads beat that many random ones), into the heap
    for a small ``k`` and through ``_best_by_threshold`` for a large one.
    """
    postings = 0
    for term in query:
        start, end = indptr[term], indptr[term + 1]
        postings += end - start
        for j in range(start, end):
            acc[indices[j]] += data[j]
    use_mask = len(mask) > 0
    size = 0
    if postings * 4 < len(acc):
        for term in query:
            for j in range(indptr[term], indptr[term + 1]):
                row = indices[j]
                if acc[row] == 0:
                    continue
                score = acc[row] + base
                acc[row] = 0
                if (
                    score > floor
                    and not (use_mask and not mask[row])
                    and _enters(out_scores, out_rows, size, score, row)
                ):
                    size = _offer(out_scores, out_rows, size, score, row)
    elif len(out_scores) > HEAP_K:
        kept: int = _best_by_threshold(acc, base, floor, mask, out_scores, out_rows)
        return kept
    else:  # rows ascend, so a full heap only takes strictly better scores: one predictable branch per row
        k = len(out_scores)
        threshold = floor
        for row in range(len(acc)):
            score = acc[row] + base
            acc[row] = 0
            if score > threshold and not (use_mask and not mask[row]):
                size = _offer(out_scores, out_rows, size, score, row)
                if size == k:
                    threshold = max(floor, out_scores[0])
    for last in range(size - 1, 0, -1):  # heap sort: the worst goes to the end, leaving best first
        out_scores[0], out_scores[last] = out_scores[last], out_scores[0]
        out_rows[0], out_rows[last] = out_rows[last], out_rows[0]
        _sift_down(out_scores, out_rows, last, 0)
    return size


@_jit(nogil=True)
def search_serial(
    data: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    flat: np.ndarray,
    pointers: np.ndarray,
    mask: np.ndarray,
    bases: np.ndarray,
    floors: np.ndarray,
    acc: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top ``k`` (scores, rows, counts) of each query ``flat[pointers[i]:pointers[i + 1]]``, in this thread."""
    n = len(pointers) - 1
    scores, rows = np.zeros((n, k), dtype=np.float32), np.zeros((n, k), dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    for i in range(n):
        query = flat[pointers[i] : pointers[i + 1]]
        counts[i] = _one_query(data, indptr, indices, query, mask, bases[i], floors[i], acc, scores[i], rows[i])
    return scores, rows, counts
