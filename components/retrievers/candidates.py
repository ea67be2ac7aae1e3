"""Candidates: each query's hits from one retriever, handed to a fusion stage as one read-only value.

Haystack's ``Pipeline`` deep-copies every input of a component before running it (``_run_component`` in
haystack/core/pipeline/pipeline.py, 3.4), element by element for lists: about 20 µs per Document on this project's
machine, and a hybrid search hands 100 candidates per side per query to its fusion stage, so those copies cost
more than both searches. A ``Candidates`` is immutable -- its documents are private and leave only as new copies --
so a deep copy may return the same object, as it does for a tuple of strings, and the fusion stage materialises
only the documents it returns.

The candidate retrievers go one step further (``Candidates.shared``): they hand over the store's own documents
with the hit scores, so no Document is built for a candidate that fusion drops -- 1-2 µs per hit, which at 100
candidates per side is as much as a BM25 query.
"""

from operator import attrgetter
from typing import Any, Literal, Self

from haystack import Document

from components.score_threshold import kept_positions
from components.stores.hits import SharedHits, derived

Side = Literal["dense", "sparse"]
_ID = attrgetter("id")


class Candidates:
    """
    One best-first list of hits per query, from one retriever (``side``: ``dense`` or ``sparse``).

    Read with ``ids``, ``scores`` and ``document`` (a new Document each call: changing it changes nothing here).

    ```python
    candidates = Candidates([hits_of_query_0, hits_of_query_1], "dense")
    candidates.ids(0), candidates.scores(0), candidates.document(0, 0)
    ```
    """

    __slots__ = ("_ids", "_lists", "_marks", "_scores", "side")

    def __init__(self, lists: list[list[Document]], side: Side) -> None:
        """Take ownership of ``lists`` (the retriever's new hits; the caller keeps no reference to them)."""
        self._set(side, [tuple(hits) for hits in lists], [tuple(d.score for d in hits) for hits in lists], {})

    @classmethod
    def shared(cls, hits: list[SharedHits], side: Side) -> Self:
        """
        Candidates over a store's own documents: per query, the stored Documents hit (shared with the store, never
        changed here) and their scores, best first. Each document read out carries its score and
        ``meta["retrieval_type"] = side``, as the retriever's hits would.
        """
        candidates = cls.__new__(cls)
        candidates._set(
            side, [tuple(docs) for docs, _ in hits], [tuple(scores) for _, scores in hits], {"retrieval_type": side}
        )
        return candidates

    def at_least(self, threshold: float | None) -> Self:
        """
        These candidates without the hits that score below ``threshold`` (a candidate retriever's
        ``score_threshold``: that side's weak hits never reach the fusion); itself for None. Order, scores and the
        marks of the kept hits are unchanged.
        """
        if threshold is None:
            return self
        lists, scores = [], []
        for hits, given in zip(self._lists, self._scores, strict=True):
            kept = kept_positions(given, threshold)
            lists.append(tuple(hits[i] for i in kept))
            scores.append(tuple(given[i] for i in kept))
        candidates = type(self).__new__(type(self))
        candidates._set(self.side, lists, scores, self._marks)
        return candidates

    def _set(
        self,
        side: Side,
        lists: list[tuple[Document, ...]],
        scores: list[tuple[float | None, ...]],
        marks: dict[str, Any],
    ) -> None:
        """Hold ``lists`` (the documents), their ``scores`` and the ``marks`` every document read out gets in meta."""
        if side not in ("dense", "sparse"):
            raise ValueError(f"side must be 'dense' or 'sparse', got {side!r}")
        self.side: Side = side
        self._lists, self._scores, self._marks = lists, scores, marks
        self._ids = [tuple(map(_ID, hits)) for hits in lists]

    def __len__(self) -> int:
        """The number of queries."""
        return len(self._lists)

    def ids(self, query: int) -> tuple[str, ...]:
        """Document ids of query ``query``'s hits, best first."""
        return self._ids[query]

    def scores(self, query: int) -> tuple[float | None, ...]:
        """Retrieval scores of query ``query``'s hits, best first."""
        return self._scores[query]

    def document(self, query: int, position: int) -> Document:
        """A new Document for hit ``position`` of query ``query``: its score, and its meta (own dict) with ``marks``."""
        base = self._lists[query][position]
        return derived(base, score=self._scores[query][position], meta={**base.meta, **self._marks})

    def hits(self, query: int) -> tuple[Document, ...]:
        """Query ``query``'s hit documents, best first, as the retriever gave them: read them, never change them
        (``document`` hands out copies). Their ``score`` and ``meta`` are those of the store when ``shared``;
        a copy adds ``scores(query)`` and ``marks``."""
        return self._lists[query]

    @property
    def marks(self) -> dict[str, Any]:
        """What every document read out gets in its meta (``{"retrieval_type": side}`` when ``shared``)."""
        return self._marks

    def documents(self, query: int) -> list[Document]:
        """New Documents for all hits of query ``query``, best first."""
        return [self.document(query, position) for position in range(len(self._lists[query]))]

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """Itself: nothing in it can change, so a copy would only cost time."""
        return self

    def to_dict(self) -> dict[str, Any]:
        """Serialise (Haystack's pipeline snapshots call this when a run fails)."""
        return {"side": self.side, "lists": [[d.to_dict() for d in self.documents(q)] for q in range(len(self))]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild from ``to_dict`` output."""
        return cls([[Document.from_dict(d) for d in hits] for hits in data["lists"]], data["side"])
