"""Query-length-adaptive fusion of dense and sparse retrieval results (mxRAG's ``MixRetrieveReranker``).

Short queries (a few keywords) are served best by BM25, long natural-language questions by dense retrieval. The
weight of the dense side follows a sigmoid of the query length in characters::

    w = baseline + amplitude / (1 + exp(-slope * (len(query) - midpoint)))

(defaults 0.4, 0.3, 1, 6: w runs from 0.40 for one-character queries to 0.70 for long ones). Scores are min-max
normalised per side (all equal -> 0), the same passage found by both sides (same ``Document.id``) is merged, and
``score = w * dense + (1 - w) * sparse``, a side that did not find the passage adding 0. The curve and the fusion
are ``components.rankers.mix_fusion``'s, which the batch joiner and the tuner share.

Unlike mxRAG, the sigmoid cannot overflow on long queries, the normalisation cannot overflow on extreme finite
scores (``±1e308`` normalise to 0 and 1, not NaN), and a document of no or unknown retrieval type is an error
rather than silently dropped. A score of ``±inf`` or NaN is a ValueError naming the document: a min-max scale has
no room for an infinite end, and treating it as "the best" would hide a broken retriever, as ``rerank_top_k``
refuses NaN for the same reason. A blank query is a ValueError, as in every mode (``components.checks``).
"""

import math
from dataclasses import replace
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from haystack import Document, component

from components.checks import check_number, check_query, check_score_threshold, check_top_k
from components.rankers.mix_fusion import best_scores, dense_weight, fused_scores
from components.rankers.reranker_base import RankerBase, above, top_k_order

Side: TypeAlias = Literal["dense", "sparse"]
SIDES: tuple[Side, Side] = ("dense", "sparse")
MAX_DOCUMENTS = 1000 * 1000


class MixRetrieveRankerBase(RankerBase):
    """
    The fusion itself, shared by :class:`MixRetrieveRanker` (one query) and ``MixRetrieveBatchRanker`` (a list
    of queries): parameters, dense weight, tag and score checks, merge. Each adds its own ``run`` sockets; neither
    is a special case of the other.
    """

    _init_parameters = ("top_k", "baseline", "amplitude", "slope", "midpoint", "score_threshold")

    def __init__(
        self,
        *,
        top_k: int = 100,
        baseline: float = 0.4,
        amplitude: float = 0.3,
        slope: float = 1.0,
        midpoint: float = 6.0,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param top_k: how many fused documents to return, 1..10000 (mxRAG's ``k``, default 100).
        :param baseline: dense weight for very short queries, in [0, 1].
        :param amplitude: how much the dense weight grows for long queries, in [0, 1]; baseline + amplitude <= 1.
        :param slope: steepness of the transition, > 0.
        :param midpoint: query length (characters) where the weight is halfway, > 0.
        :param score_threshold: drop documents whose FUSED score is below it (applied after fusion; fused scores
            lie in [0, 1]: ``w * dense + (1 - w) * sparse`` of min-max normalised scores); None keeps all.
        :raises ValueError: if a parameter is out of range; the message names it and the range.
        """
        self.top_k = check_top_k(top_k)
        self.score_threshold = check_score_threshold(score_threshold)
        self.baseline = check_number("baseline", baseline, 0.0, 1.0)
        self.amplitude = check_number("amplitude", amplitude, 0.0, 1.0)
        if self.baseline + self.amplitude > 1.0:
            raise ValueError(
                f"baseline + amplitude must be <= 1 so the weight stays in [0, 1], got {baseline + amplitude}"
            )
        self.slope = check_number("slope", slope, 0.0, math.inf, low_open=True)
        self.midpoint = check_number("midpoint", midpoint, 0.0, math.inf, low_open=True)

    def dense_weight(self, query: str) -> float:
        """The weight ``w`` of the dense side for this query (``1 - w`` goes to the sparse side)."""
        return dense_weight(len(query), self.baseline, self.amplitude, self.slope, self.midpoint)

    def rerank(self, query: str, texts: list[Document], batch_size: int = 32) -> npt.NDArray[np.float64]:
        """
        mxRAG's call: fused score of each tagged document, in input order (copies of a passage share its score).

        ``texts`` are Documents tagged ``meta["retrieval_type"]``, as in mxRAG; ``batch_size`` is unused (mxRAG too).
        """
        if not isinstance(texts, list) or not 1 <= len(texts) <= MAX_DOCUMENTS:
            raise ValueError(f"texts must be a list of [1, {MAX_DOCUMENTS}] Documents")
        fused = self._fuse(query, self._tagged(texts, None, "texts"))
        by_id = {doc.id: doc.score for doc in fused}
        return np.array([by_id[doc.id] for doc in texts], dtype=np.float64)

    def _fused_top_k(
        self,
        query: str,
        documents: list[Document] | None,
        dense_documents: list[Document] | None,
        sparse_documents: list[Document] | None,
        top_k: int | None,
        score_threshold: float | None,
    ) -> list[Document]:
        """The checks and fusion behind one query's ``run``: the best ``top_k`` fused documents, none below the
        run's ``score_threshold``."""
        check_query(query)
        top_k = self._resolve_top_k(top_k)
        threshold = self._resolve_threshold(score_threshold)
        tagged = (
            self._tagged(documents or [], None, "documents")
            + self._tagged(dense_documents or [], "dense", "dense_documents")
            + self._tagged(sparse_documents or [], "sparse", "sparse_documents")
        )
        if not tagged:
            return []
        fused = self._fuse(query, tagged)
        scores = np.array([doc.score for doc in fused], dtype=np.float64)
        return [fused[i] for i in above(scores, top_k_order(scores, top_k), threshold)]

    @staticmethod
    def _tagged(documents: list[Document], side: Side | None, socket: str) -> list[tuple[Side, float, Document]]:
        """Pair each document with its side and score, checking both; errors name the socket and index."""
        if len(documents) > MAX_DOCUMENTS:
            raise ValueError(f"{socket} must hold at most {MAX_DOCUMENTS} documents, got {len(documents)}")
        tagged = []
        for i, doc in enumerate(documents):
            where = f"{socket}[{i}] (id={doc.id})"
            tag = doc.meta.get("retrieval_type")
            if side is None and tag not in SIDES:
                raise ValueError(f'{where} has meta["retrieval_type"]={tag!r}; expected one of {SIDES}')
            if side is not None and tag is not None and tag != side:
                raise ValueError(f'{where} has meta["retrieval_type"]={tag!r} but came in through {socket}')
            score = doc.score
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise ValueError(f"{where} has score {score!r}; fusion needs a finite retrieval score")
            resolved: Side = side if side is not None else ("dense" if tag == "dense" else "sparse")  # tag in SIDES
            tagged.append((resolved, float(score), doc))
        return tagged

    def _fuse(self, query: str, tagged: list[tuple[Side, float, Document]]) -> list[Document]:
        """Normalise per side, merge by id, weigh by query length (``mix_fusion.fused_scores``); one new document
        per passage, in input order."""
        dense = self.dense_weight(check_query(query))  # rerank() reaches here without run()'s check
        first: dict[str, Document] = {}
        listed: dict[Side, tuple[list[str], list[float]]] = {side: ([], []) for side in SIDES}
        for side, score, doc in tagged:
            first.setdefault(doc.id, doc)
            listed[side][0].append(doc.id)
            listed[side][1].append(score)
        raw = {side: best_scores(*listed[side]) for side in SIDES}  # a passage listed twice keeps its best score
        fused = fused_scores(dense, raw["dense"], raw["sparse"])
        return [self._merged(doc, fused[doc.id], raw) for doc in first.values()]

    @staticmethod
    def _merged(doc: Document, score: float, raw: dict[Side, dict[str, float]]) -> Document:
        """The output document for one passage: its fused SCORE and where it was found."""
        sources = [side for side in SIDES if doc.id in raw[side]]
        meta = {key: value for key, value in doc.meta.items() if key != "retrieval_type"}
        meta["retrieval_sources"] = sources
        for side in sources:
            meta[f"{side}_score"] = raw[side][doc.id]
        return replace(doc, score=score, meta=meta)


@component
class MixRetrieveRanker(MixRetrieveRankerBase):
    """
    Fuses dense and sparse retrieval results with a weight that grows with the query's length.

    Two ways to feed it, usable together:
    - ``dense_documents`` / ``sparse_documents``: wire a dense retriever and a BM25 retriever straight in, no
      joiner needed; the socket says the side. A document whose ``meta["retrieval_type"]`` names the other side
      is an error (a miswired pipeline).
    - ``documents``: one mixed list, each document tagged ``meta["retrieval_type"]`` = ``"dense"`` or
      ``"sparse"`` (mxRAG's input); a missing or unknown tag is an error naming the document.

    Every document needs a ``score``. Output documents are new, best first, with ``score`` the fused score and
    ``meta["retrieval_sources"]`` (``["dense"]``, ``["sparse"]`` or both), ``meta["dense_score"]`` and/or
    ``meta["sparse_score"]`` (the raw scores) in place of ``meta["retrieval_type"]``.
    """

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        documents: list[Document] | None = None,
        dense_documents: list[Document] | None = None,
        sparse_documents: list[Document] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """
        Fuse the given results and keep the best ``top_k``, less those whose fused score is below the threshold.

        :param query: the query; its length in characters sets the dense weight.
        :param documents: documents tagged ``meta["retrieval_type"]`` ``"dense"`` or ``"sparse"``.
        :param dense_documents: results of a dense retriever (tag optional).
        :param sparse_documents: results of a sparse (BM25) retriever (tag optional).
        :param top_k: how many to return (1..10000); defaults to the init value.
        :param score_threshold: minimum fused score for this run; defaults to the init value.
        :returns: ``{"documents": [...]}``, new documents with the fused score, best first.
        :raises ValueError: for a blank, oversized or non-Unicode query (even with no documents), a bad ``top_k``
            or ``score_threshold``, a missing or contradicting tag, or a score that is not a finite number (the
            message names the document).
        """
        fused = self._fused_top_k(query, documents, dense_documents, sparse_documents, top_k, score_threshold)
        return {"documents": fused}
