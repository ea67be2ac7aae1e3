"""The reranker contract shared by every ranker in this package, with mxRAG's limits.

mxRAG's rerankers offer two calls: ``rerank(query, texts, batch_size)`` returns one score per text, in input
order, and ``rerank_top_k(objs, scores)`` keeps the ``k`` best objects. Our Haystack components offer both, plus
the usual ``run(query, documents, top_k)`` socket. The limits are mxRAG's; a value out of range is a
``ValueError`` that names the parameter and the allowed range, never a silent truncation. The query and ``top_k``
rules (query 1..1 MiB characters, not blank, valid Unicode; k 1..10000) are the shared ones of
``components.checks``, so a ranker refuses a bad query with the same message as a retriever or embedder; the limits
on the texts to score and on ``batch_size`` belong to rankers alone and live here. Every ranker also takes a
``score_threshold`` (init, and run-time for one run): documents scoring below it are dropped after ranking
(``components.score_threshold``), in ``run`` and in ``rerank_top_k`` alike.
"""

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Protocol, Self, TypeAlias, TypeVar, cast, runtime_checkable

import numpy as np
import numpy.typing as npt
from haystack import Document, component, default_from_dict, default_to_dict

from components.checks import check_int, check_query, check_top_k, check_unicode
from components.score_threshold import reaches, run_threshold

TEXTS_MAX_COUNT = 1000 * 1000
TEXT_MAX_CHARS = 1024 * 1024
BATCH_SIZE_RANGE = (1, 1024)

T = TypeVar("T")
# One score per scored item, in input order: float32 from the model rankers, float64 from the fusion rankers.
Scores: TypeAlias = npt.NDArray[np.float32 | np.float64]


@runtime_checkable
class Reranker(Protocol):
    """What every text ranker here offers: mxRAG's two calls and Haystack's ``run`` socket.

    ``MixRetrieveRanker`` offers the same names, but it scores tagged Documents rather than texts and its ``run``
    has a socket per retrieval side, so it is its own type rather than a ``Reranker``.
    """

    top_k: int

    def rerank(self, query: str, texts: list[str], batch_size: int = 32) -> Scores:
        """Score each text against the query; scores come back in input order."""

    def rerank_top_k(self, objs: Sequence[T], scores: npt.ArrayLike) -> list[T]:
        """Keep the ``top_k`` objects with the highest scores, best first."""

    def run(
        self, query: str, documents: list[Document], top_k: int | None = None, score_threshold: float | None = None
    ) -> dict[str, Any]:
        """Haystack socket: new documents carrying scores, best first, none below ``score_threshold``."""


def check_texts(texts: Any) -> list[str]:
    """Texts are a list of 1..1,000,000 valid-Unicode strings of 1..1 MiB characters; errors name the bad index."""
    if not isinstance(texts, (list, tuple)):
        raise ValueError(f"texts must be a list of strings, got {type(texts).__name__}")
    if not 1 <= len(texts) <= TEXTS_MAX_COUNT:
        raise ValueError(f"texts must hold [1, {TEXTS_MAX_COUNT}] items, got {len(texts)}")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts[{i}] must be a string, got {type(text).__name__}")
        if not 1 <= len(text) <= TEXT_MAX_CHARS:
            raise ValueError(f"texts[{i}] length must be in [1, {TEXT_MAX_CHARS}] characters, got {len(text)}")
        check_unicode(text, f"texts[{i}]")
    return list(texts)


def check_batch_size(batch_size: Any) -> int:
    """mxRAG's batch size range, 1..1024."""
    return check_int("batch_size", batch_size, *BATCH_SIZE_RANGE)


def top_k_order(scores: Scores, k: int) -> list[int]:
    """Indexes of the ``k`` highest scores, best first; equal scores keep their input order (stable)."""
    return cast(list[int], np.argsort(-scores, kind="stable")[:k].tolist())


def above(scores: Scores, order: list[int], threshold: float | None) -> list[int]:
    """The indexes of ORDER (into SCORES) whose score is at least THRESHOLD, in ORDER's order; ORDER for None."""
    if threshold is None:
        return order
    return [i for i in order if reaches(float(scores[i]), threshold)]


def unique_documents(documents: list[Document]) -> list[Document]:
    """Drop later copies of a document id, so that a passage is scored and returned once."""
    seen: set[str] = set()
    unique = []
    for doc in documents:
        if doc.id not in seen:
            seen.add(doc.id)
            unique.append(doc)
    return unique


def document_texts(documents: list[Document]) -> list[str]:
    """The text of each document; a document without text is an error that names it (never skipped)."""
    texts = []
    for i, doc in enumerate(documents):
        if not isinstance(doc.content, str) or not doc.content:
            raise ValueError(f"documents[{i}] (id={doc.id}) has no text content to rank; rankers need 1+ characters")
        texts.append(doc.content)
    return texts


class RankerBase:
    """
    What every ranker here shares, whatever it scores: ``rerank_top_k``, the run-time ``top_k``, turning scores
    into ranked Haystack documents (none below the ``score_threshold``), and ``to_dict``/``from_dict``. It has no
    ``run``: each ranker family adds the sockets it takes (:class:`RerankerMixin` for rankers of document texts).

    ``to_dict`` serialises the init parameters named in ``_init_parameters``, each read from the attribute of the
    same name (a Secret keeps only its env var name, a ComponentDevice its description; Haystack restores both).
    """

    top_k: int
    score_threshold: float | None  # checked at init with components.checks.check_score_threshold
    _init_parameters: ClassVar[tuple[str, ...]]

    def rerank_top_k(self, objs: Sequence[T], scores: npt.ArrayLike) -> list[T]:
        """
        Keep the ``top_k`` objects with the highest scores, best first, stable on ties (mxRAG's call), less those
        scoring below the init ``score_threshold``, if one is set.

        :param objs: the objects that were scored, e.g. texts or documents.
        :param scores: one finite score per object, a 1-D array of the same length as ``objs``.
        :raises ValueError: if the lengths differ, the array is not 1-D, or a score is NaN.
        """
        values = np.asarray(scores)
        if values.ndim != 1:
            raise ValueError(f"scores must be a 1-D array, got shape {values.shape}")
        if not 1 <= len(objs) <= TEXTS_MAX_COUNT:
            raise ValueError(f"objs must hold [1, {TEXTS_MAX_COUNT}] items, got {len(objs)}")
        if len(objs) != len(values):
            raise ValueError(f"objs and scores must have the same length, got {len(objs)} and {len(values)}")
        if np.isnan(values).any():
            raise ValueError(f"scores[{int(np.flatnonzero(np.isnan(values))[0])}] is NaN")
        return [objs[i] for i in above(values, top_k_order(values, self.top_k), self.score_threshold)]

    def _resolve_top_k(self, top_k: int | None) -> int:
        """The run-time ``top_k`` if given (checked), else the one set at init."""
        return self.top_k if top_k is None else check_top_k(top_k)

    def _resolve_threshold(self, score_threshold: float | None) -> float | None:
        """The run-time ``score_threshold`` if given (checked), else the one set at init (None: none)."""
        return run_threshold(self.score_threshold, score_threshold)

    @staticmethod
    def _ranked_documents(
        documents: list[Document], scores: Scores, top_k: int, threshold: float | None
    ) -> list[Document]:
        """New documents with their scores, best first, none below THRESHOLD; the inputs are left untouched."""
        return [
            replace(documents[i], score=float(scores[i])) for i in above(scores, top_k_order(scores, top_k), threshold)
        ]

    def to_dict(self) -> dict[str, Any]:
        """Serialize to a dictionary (JSON/YAML-able); an API key is stored as its env var name, never in clear."""
        return default_to_dict(self, **{name: getattr(self, name) for name in self._init_parameters})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Deserialize from ``to_dict``'s output (a Secret or ComponentDevice is restored by Haystack)."""
        return default_from_dict(cls, data)


class RerankerMixin(RankerBase):
    """
    The ``run`` socket of a ranker that scores document texts with its own ``rerank`` (mxRAG's call).
    The concrete ranker is still decorated with ``@component`` (which finds the inherited ``run``).
    """

    batch_size: int
    rerank: Callable[[str, list[str], int], Scores]  # the concrete ranker's scoring call, in input order

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, documents: list[Document], top_k: int | None = None, score_threshold: float | None = None
    ) -> dict[str, list[Document]]:
        """
        Rank documents by relevance to the query.

        :param query: the query: 1..1 MiB characters, not blank, valid Unicode (checked even with no documents).
        :param documents: documents to rank; later copies of the same id are dropped; each needs text content.
        :param top_k: how many to return (1..10000); defaults to the init value.
        :param score_threshold: drop documents whose new score is below it; defaults to the init value.
        :returns: ``{"documents": [...]}``, new documents with ``score`` set, best first.
        """
        check_query(query)
        top_k = self._resolve_top_k(top_k)
        threshold = self._resolve_threshold(score_threshold)
        if not documents:
            return {"documents": []}
        unique = unique_documents(documents)
        scores = self.rerank(query, document_texts(unique), self.batch_size)
        return {"documents": self._ranked_documents(unique, scores, top_k, threshold)}
