"""A minimum score: the one filter every retriever, ranker and fusion joiner applies to its hits.

``score_threshold`` is an init parameter and a run-time input of each of them (``needle search --min-score`` sets it
on the pipeline's answering component). The run-time value replaces the init one for that run; None at run time
keeps the init one, and None at init means no threshold, so a component built without one answers exactly as
before. A hit is kept when ``score >= threshold``; the others are dropped, the order and the kept hits are
unchanged, and fewer than ``top_k`` hits may come back (none at all, too). A hit without a score cannot be shown
to reach a threshold, so it is dropped when one is set. The value is checked by
``components.checks.check_score_threshold``: None or a finite number.

The threshold compares the component's own output score, so its meaning depends on that score's scale
(docs/guides/score-threshold.md): BM25 scores are unbounded and grow with the query's length, cosine and inner
products of normalised embeddings lie in [-1, 1] (FAISS's L2 metric gives negated squared distances, <= 0), fused
scores are those of the fusion (mix: a weighted sum of min-max normalised scores in [0, 1]; RRF: reciprocal-rank
sums scaled so that first place in every list scores 1), and cross-encoder scores are logits or, with
``activation="sigmoid"``, numbers in (0, 1). On a fusion joiner or ranker it applies after fusion; on a candidate
retriever (the input of a fusion) it drops that side's weak hits before fusion.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from components.checks import check_score_threshold

if TYPE_CHECKING:
    from haystack import Document

D = TypeVar("D", bound="Document")


def run_threshold(init: float | None, run: Any) -> float | None:
    """The threshold of one run: RUN if given (checked, named ``score_threshold``), else the INIT one."""
    return init if run is None else check_score_threshold(run)


def reaches(score: Any, threshold: float) -> bool:
    """Whether SCORE (a hit's, maybe None) is at least THRESHOLD."""
    return score is not None and score >= threshold


def above_threshold(documents: list[D], threshold: float | None) -> list[D]:
    """DOCUMENTS whose score is at least THRESHOLD, in their order; DOCUMENTS itself when THRESHOLD is None."""
    if threshold is None:
        return documents
    return [document for document in documents if reaches(document.score, threshold)]


def above_threshold_lists(lists: list[list[D]], threshold: float | None) -> list[list[D]]:
    """``above_threshold`` of each query's list; LISTS itself when THRESHOLD is None."""
    if threshold is None:
        return lists
    return [above_threshold(documents, threshold) for documents in lists]


def kept_positions(scores: Sequence[Any], threshold: float) -> list[int]:
    """The positions of SCORES that are at least THRESHOLD, in order."""
    return [position for position, score in enumerate(scores) if reaches(score, threshold)]
