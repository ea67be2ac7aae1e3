"""Every BM25 formula of the store, once: the method table, IDF, the term-frequency component and the weight of
a missing term, in numpy (the delta segment, the IDF of every build) and in numba (``tfc_kernel``, which the
weight-matrix kernel inlines), side by side so that a change to one is seen beside the other.

The variants follow Kamphuis et al., "Which BM25 do you mean?" (ECIR 2020), as bm25s does: a term's weight in a
document is ``idf(df, N) * tfc(tf, dl, avgdl)``, and BM25L and BM25+ also give every query term a document lacks
a weight (``nonoccurrence``; the store subtracts it from the stored weights and adds it back per query, as
bm25s does). Both twins perform bm25s' own operations in its order, float32 roundings included (bm25s multiplies
its float32 ``tf`` array by ``k1 + 1`` in float32 for ATIRE and BM25+), so the main segment (built by the kernel)
and the delta segment (weighted in numpy) give a document the same score, and both equal bm25s'.
"""

import numpy as np
import numpy.typing as npt

from components.stores.bm25.jit import cached_jit

# The one method table: the name a store takes -> the code the numba kernels branch on.
METHOD_CODES = {"robertson": 0, "lucene": 1, "atire": 2, "bm25l": 3, "bm25+": 4}
METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")  # as the store's settings list them
NONOCCURRENCE_METHODS = ("bm25l", "bm25+")


def _unknown(method: str) -> ValueError:
    return ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def term_idf(method: str, df: npt.NDArray[np.integer], n_docs: int) -> npt.NDArray[np.float64]:
    """The IDF of every term id of ``df`` (document frequencies over ``n_docs`` documents); 0 for a term no document
    holds, which no query weight then counts."""
    weights = np.zeros(len(df))
    seen = df > 0
    weights[seen] = idf(method, df[seen], n_docs)
    return weights


def idf(method: str, df: npt.NDArray[np.integer], n_docs: int) -> npt.NDArray[np.float64]:
    """Inverse document frequency of terms found in ``df`` of ``n_docs`` documents (df >= 1)."""
    freq = df.astype(np.float64)
    if method == "lucene":
        return np.log(1.0 + (n_docs - freq + 0.5) / (freq + 0.5))
    if method == "robertson":  # bm25s clips the ratio at 1, so very common terms weigh 0 instead of < 0
        return np.log(np.maximum((n_docs - freq + 0.5) / (freq + 0.5), 1.0))
    if method == "atire":
        return np.log(n_docs / freq)
    if method == "bm25l":
        return np.log((n_docs + 1) / (freq + 0.5))
    if method == "bm25+":
        return np.log((n_docs + 1) / freq)
    raise _unknown(method)


def tfc(
    method: str,
    tf: npt.NDArray[np.float64],
    dl: npt.NDArray[np.float64],
    avgdl: float,
    k1: float,
    b: float,
    delta: float,
) -> npt.NDArray[np.float64]:
    """Term-frequency component of ``tf`` occurrences in documents of length ``dl`` (``tfc_kernel``'s numpy twin)."""
    if method not in METHOD_CODES:
        raise _unknown(method)
    norm = 1.0 - b + b * dl / avgdl
    if method == "atire":
        return (tf.astype(np.float32) * np.float32(k1 + 1)).astype(np.float64) / (tf + k1 * norm)
    if method == "bm25l":
        c = tf / norm
        return ((k1 + 1.0) * (c + delta)) / (k1 + c + delta)
    if method == "bm25+":
        return (np.float32(k1 + 1) * tf.astype(np.float32)).astype(np.float64) / (k1 * norm + tf) + delta
    return tf / (k1 * norm + tf)  # lucene, robertson


@cached_jit(nogil=True, inline="always")
def tfc_kernel(method: int, tf: float, dl: float, avgdl: float, k1: float, b: float, delta: float) -> float:
    """``tfc`` for one term in numba, METHOD a code of METHOD_CODES (bm25s' ``_score_tfc_*``, same operations)."""
    if method == 2:  # atire
        return float(np.float32(tf) * np.float32(k1 + 1)) / (tf + k1 * (1 - b + b * dl / avgdl))
    if method == 3:  # bm25l
        c = tf / (1 - b + b * dl / avgdl)
        return ((k1 + 1) * (c + delta)) / (k1 + c + delta)
    if method == 4:  # bm25+
        return float(np.float32(k1 + 1) * np.float32(tf)) / (k1 * (1 - b + b * dl / avgdl) + tf) + delta
    return tf / (k1 * ((1 - b) + b * dl / avgdl) + tf)  # robertson, lucene


def nonoccurrence(
    method: str, term_idf: npt.NDArray[np.float64], k1: float, b: float, delta: float
) -> npt.NDArray[np.float64]:
    """Weight of each query term in a document that lacks it: ``idf * tfc(tf=0)`` at the average length (bm25s'
    ``tfc(0, avgdl, avgdl)``), zero except for BM25L and BM25+."""
    if method not in NONOCCURRENCE_METHODS:
        return np.zeros_like(term_idf)
    zero = np.zeros_like(term_idf)
    return term_idf * tfc(method, zero, np.ones_like(term_idf), 1.0, k1, b, delta)
