"""How trec_eval reads the scores of a run, and the scores a run writes so that it reads the ranks as written.

trec_eval (and pytrec_eval, which is its C code) ignores a run's rank column: it holds each score as a 32-bit float
(``float sim`` in its ``DOCNO_INFO``) and sorts a query's documents by that score, descending, breaking ties by
doc id, descending (``comp_sim_docno`` in ``form_res_rels.c``). Two scores that differ as Python floats can
therefore tie (RRF's sums of reciprocal ranks often do), and a tie is ordered by doc id, not by the retrieval.

``written_score`` keeps a ranking's order under that rule: each score is written as it is when its 32-bit value is
below the one written before it, else as the next 32-bit float below that one. Every tool that sorts by score, with
32- or 64-bit floats and whatever its tie rule, then reads the ranks the retrieval returned; a score moves only where
it ties, by a few units in the 32-bit float's last place. Pure Python (``struct``): a batch run is prepared before
numpy loads.
"""

from __future__ import annotations

import math
import struct

_FLOAT32 = struct.Struct("<f")
_BITS32 = struct.Struct("<I")
FLOAT32_MAX: float = _FLOAT32.unpack(_BITS32.pack(0x7F7FFFFF))[0]
FLOAT32_TINY: float = _FLOAT32.unpack(_BITS32.pack(1))[0]  # the least 32-bit float above 0


def as_float32(value: float) -> float:
    """VALUE rounded to the nearest 32-bit float, as trec_eval holds a score (beyond its range: an infinity)."""
    try:
        rounded: float = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return rounded


def float32_below(value: float) -> float:
    """The greatest 32-bit float below VALUE, itself a 32-bit float or an infinity."""
    if value == math.inf:
        return FLOAT32_MAX
    if value == 0:
        return -FLOAT32_TINY
    bits: int = _BITS32.unpack(_FLOAT32.pack(value))[0]
    below: float = _FLOAT32.unpack(_BITS32.pack(bits - 1 if value > 0 else bits + 1))[0]
    return below


def written_score(score: float, previous: float) -> float:
    """SCORE as a run writes it after PREVIOUS (the score written before it; infinity for a query's first): SCORE
    itself when trec_eval reads it strictly below PREVIOUS, else the next 32-bit float below PREVIOUS."""
    previous32 = as_float32(previous)
    return score if as_float32(score) < previous32 else float32_below(previous32)


def trec_order_key(doc_id: str, score: float) -> tuple[float, str]:
    """A sort key that, in descending order, ranks documents as trec_eval does: by 32-bit score, then doc id."""
    return as_float32(score), doc_id
