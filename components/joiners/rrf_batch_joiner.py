"""RRFBatchJoiner: Haystack's reciprocal rank fusion (DocumentJoiner) of dense and BM25 hits, read from Candidates.

The rrf batch pipeline's last stage. For each query it gives exactly what ``DocumentJoiner(join_mode=
"reciprocal_rank_fusion")`` gives for that query's two lists in rrf_search.yaml (which receives the BM25 list
first: Haystack runs ready components in name order): the same scores (k = 61, per-list weights), the same order
(ties keep first-seen order) and, for a passage found by both, the dense side's document. It takes the hits as
:class:`~components.retrievers.candidates.Candidates`, which Haystack passes on without copying each Document, and
builds Documents only for the ``top_k`` it returns.

Unlike DocumentJoiner it takes the RRF constant ``k`` as a parameter (61 by default, DocumentJoiner's fixed value),
so that ``needle tune`` can set the value it fitted on a training split (DIR/fusion.json).
"""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.checks import check_score_threshold, check_top_k
from components.joiners.candidate_sides import sides
from components.retrievers.candidates import Candidates, Side
from components.score_threshold import reaches, run_threshold
from components.stores.hits import blank_document, collector_paused

RRF_K = 61  # Haystack's constant: the paper's 60, plus 1 for 0-based ranks
MAX_K = 1000


@component
class RRFBatchJoiner:
    """
    Reciprocal rank fusion of dense and BM25 candidates, one fused list per query.

    Each passage scores ``sum over lists of (weight * n) / (k + rank)``, divided by ``n / k`` (n = number of
    lists), as in Haystack's ``DocumentJoiner`` (where k = 61): 1 for a passage first in every list, less further
    down (with k = 61, first in one list only: 0.5). Output documents are new, best first, with that ``score``;
    ``score_threshold`` drops those whose fused score is below it (applied after fusion).

    ```python
    joiner = RRFBatchJoiner(top_k=10)
    joiner.run(dense_candidates=dense, sparse_candidates=sparse)["documents"]
    ```
    """

    def __init__(
        self,
        top_k: int = 10,
        weights: dict[str, float] | None = None,
        k: int = RRF_K,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param top_k: documents per query, in [1, 10000].
        :param weights: weight of each side, ``{"dense": ..., "sparse": ...}`` (non-negative, not both 0; they are
            normalised to sum 1); None weighs both equally.
        :param k: the RRF constant added to each 0-based rank, an integer in [1, 1000]; smaller values favour the
            top of each list more.
        :param score_threshold: drop documents whose fused score is below it, in (0, 1] (see the class
            docstring); None keeps every document.
        :raises ValueError: for ``top_k``, ``k`` or ``score_threshold`` out of range or bad weights (the message
            names the value).
        """
        self.top_k = check_top_k(top_k)
        self.score_threshold = check_score_threshold(score_threshold)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be an integer in [1, {MAX_K}], got {k!r}")
        self.k = k
        if weights is not None:
            if not isinstance(weights, dict) or set(weights) != {"dense", "sparse"}:
                raise ValueError(f"weights must be None or {{'dense': w, 'sparse': w}}, got {weights!r}")
            values = list(weights.values())
            if any(isinstance(w, bool) or not isinstance(w, (int, float)) or not w >= 0 for w in values):
                raise ValueError(f"weights must be numbers >= 0, got {weights!r}")
            if sum(values) == 0:
                raise ValueError("weights must not sum to zero")
        self.weights = weights

    def to_dict(self) -> dict[str, Any]:
        """Serialise the joiner's settings."""
        return default_to_dict(
            self, top_k=self.top_k, weights=self.weights, k=self.k, score_threshold=self.score_threshold
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RRFBatchJoiner":
        """Rebuild from ``to_dict`` output."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        dense_candidates: Candidates | None = None,
        sparse_candidates: Candidates | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Fuse each query's candidates by reciprocal rank and keep its best ``top_k``, none whose fused score is
        below the threshold.

        :param dense_candidates: a dense retriever's candidates, one list per query.
        :param sparse_candidates: a BM25 retriever's candidates, one list per query.
        :param top_k: how many to return per query (1..10000); defaults to the init value.
        :param score_threshold: minimum fused score for this run; defaults to the init value.
        :returns: ``{"documents": [[...], ...]}``, one list per query, best first.
        :raises ValueError: for a bad ``top_k`` or ``score_threshold``, two sides with different numbers of
            queries, or a side that came through the other side's socket.
        """
        top_k = self.top_k if top_k is None else check_top_k(top_k)
        threshold = run_threshold(self.score_threshold, score_threshold)
        count = len(dense_candidates if dense_candidates is not None else sparse_candidates or [])
        # DocumentJoiner in rrf_search.yaml gets the BM25 list first (see the module docstring).
        connected = sides(count, dense_candidates, sparse_candidates)[::-1]
        with collector_paused():
            return {"documents": [self._fuse_query(q, connected, top_k, threshold) for q in range(count)]}

    def _fuse_query(
        self, q: int, connected: list[tuple[Side, Candidates]], top_k: int, threshold: float | None
    ) -> list[Document]:
        """DocumentJoiner's ``_reciprocal_rank_fusion`` for query ``q``, then its stable sort by score and cut, less
        the documents scoring below THRESHOLD.

        DocumentJoiner keeps, for a passage listed more than once, its last listing's document: ``kept`` is
        updated list by list, in order. The output Documents are filled in place, no call per document.
        """
        n = len(connected)
        total = sum(self.weights.values()) if self.weights else 0.0
        scores: dict[str, float] = {}
        kept: dict[str, Document] = {}
        marks: dict[str, dict[str, Any]] = {}
        for side, candidates in connected:
            factor = (self.weights[side] / total if self.weights else 1 / n) * n
            ids = candidates.ids(q)
            for rank, doc_id in enumerate(ids):
                scores[doc_id] = scores.get(doc_id, 0) + factor / (self.k + rank)
            kept.update(zip(ids, candidates.hits(q), strict=True))
            marks.update(dict.fromkeys(ids, candidates.marks))
        scale = n / self.k
        fused = {doc_id: score / scale for doc_id, score in scores.items()}
        documents = []
        for doc_id in sorted(fused, key=fused.__getitem__, reverse=True)[:top_k]:
            if threshold is not None and not reaches(fused[doc_id], threshold):
                break  # best first: every later one scores lower
            base = kept[doc_id]
            document = blank_document()
            fields = document.__dict__
            fields.update(base.__dict__)
            fields["score"], fields["meta"] = fused[doc_id], {**base.meta, **marks[doc_id]}
            documents.append(document)
        return documents
