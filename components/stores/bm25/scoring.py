"""BM25 term weights for the delta segment, with the same formulas and variants as bm25s.

bm25s bakes its weights into a sparse matrix built from one corpus' statistics; documents written after that
build live in a small delta segment that we score ourselves with the statistics of the whole store, so that
their scores are comparable with the main segment's. The variants follow Kamphuis et al., "Which BM25 do you
mean?" (ECIR 2020), as bm25s does: ``idf(df, N)`` times a term-frequency component ``tfc(tf, dl, avgdl)``.
BM25L and BM25+ also give every query term a document lacks a weight (``nonoccurrence``).
"""

import numpy as np
import numpy.typing as npt

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
NONOCCURRENCE_METHODS = ("bm25l", "bm25+")


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
    raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def tfc(
    method: str,
    tf: npt.NDArray[np.float64],
    dl: npt.NDArray[np.float64],
    avgdl: float,
    k1: float,
    b: float,
    delta: float,
) -> npt.NDArray[np.float64]:
    """Term-frequency component of ``tf`` occurrences in documents of length ``dl``."""
    norm = 1.0 - b + b * dl / avgdl
    if method in ("lucene", "robertson"):
        return tf / (k1 * norm + tf)
    if method == "atire":
        return tf * (k1 + 1.0) / (tf + k1 * norm)
    if method == "bm25l":
        c = tf / norm
        return (k1 + 1.0) * (c + delta) / (k1 + c + delta)
    if method == "bm25+":
        return (k1 + 1.0) * tf / (k1 * norm + tf) + delta
    raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def nonoccurrence(
    method: str, term_idf: npt.NDArray[np.float64], k1: float, b: float, delta: float
) -> npt.NDArray[np.float64]:
    """Weight of a query term in a document that lacks it (zero except for BM25L and BM25+)."""
    if method not in NONOCCURRENCE_METHODS:
        return np.zeros_like(term_idf)
    zero = np.zeros_like(term_idf)
    return term_idf * tfc(method, zero, np.ones_like(term_idf), 1.0, k1, b, delta)
