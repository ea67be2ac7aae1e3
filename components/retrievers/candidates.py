"""Candidates: each query's hits from one retriever, handed to a fusion stage as one read-only value.

Haystack's ``Pipeline`` deep-copies every input of a component before running it (``_run_component`` in
haystack/core/pipeline/pipeline.py, 3.4), element by element for lists: about 20 µs per Document on this project's
machine, and a hybrid search hands 100 candidates per side per query to its fusion stage, so those copies cost
more than both searches. A ``Candidates`` is immutable -- its documents are private and leave only as new copies --
so a deep copy may return the same object, as it does for a tuple of strings, and the fusion stage materialises
only the documents it returns.
"""

from typing import Any, Literal, Self

from haystack import Document

from components.stores.faiss.sqlite_document_table import derived

Side = Literal["dense", "sparse"]


class Candidates:
    """
    One best-first list of hits per query, from one retriever (``side``: ``dense`` or ``sparse``).

    Read with ``ids``, ``scores`` and ``document`` (a new Document each call: changing it changes nothing here).

    ```python
    candidates = Candidates([hits_of_query_0, hits_of_query_1], "dense")
    candidates.ids(0), candidates.scores(0), candidates.document(0, 0)
    ```
    """

    __slots__ = ("_ids", "_lists", "_scores", "side")

    def __init__(self, lists: list[list[Document]], side: Side) -> None:
        """Take ownership of ``lists`` (the retriever's new hits; the caller keeps no reference to them)."""
        if side not in ("dense", "sparse"):
            raise ValueError(f"side must be 'dense' or 'sparse', got {side!r}")
        self.side: Side = side
        self._lists = [tuple(hits) for hits in lists]
        self._ids = [tuple(d.id for d in hits) for hits in self._lists]
        self._scores = [tuple(d.score for d in hits) for hits in self._lists]

    def __len__(self) -> int:
        """The number of queries."""
        return len(self._lists)

    def ids(self, query: int) -> tuple[str, ...]:
        """Document ids of query ``query``'s hits, best first."""
        return self._ids[query]

    def scores(self, query: int) -> tuple[float | None, ...]:
        """Retrieval scores of query ``query``'s hits, best first."""
        return self._scores[query]

    def meta(self, query: int, position: int) -> dict[str, Any]:
        """A new copy of the meta of hit ``position`` of query ``query``."""
        return dict(self._lists[query][position].meta)

    def document(self, query: int, position: int, **changes: Any) -> Document:
        """A new Document for hit ``position`` of query ``query`` (own meta dict), with ``changes`` applied."""
        base = self._lists[query][position]
        return derived(base, **{"meta": dict(base.meta), **changes})

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
        return {"side": self.side, "lists": [[d.to_dict() for d in hits] for hits in self._lists]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild from ``to_dict`` output."""
        return cls([[Document.from_dict(d) for d in hits] for hits in data["lists"]], data["side"])
