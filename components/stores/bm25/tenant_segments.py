"""A BM25 store's tenant filters (``components.stores.tenants``): the tenant's share of the weight matrix, searched
alone.

The generic filtered search tests the filter on every document (kept decoded afterwards) and scores the query over
all the postings of its terms, masking the rows of other tenants at the end: both cost the whole corpus. Here

- the main segment's live rows are grouped by the value of the field (one pass over its documents, kept until the
  store changes);
- a tenant's rows of the bm25s weight matrix (term x document, CSC) are copied once into a matrix of their own
  (``TenantMatrix``: the same float32 weights, the tenant's rows renumbered in order, only the terms it holds), kept
  while the copies' bytes (arrays and a fixed charge per tenant for its Python objects, ``_cost``)
  stay within the main matrix's (least recently used dropped first), and scored by the store's numba
  kernel: a query then visits the postings of the tenant's documents only. Weights were computed with the statistics
  of the whole index, and each row's score is summed term by term in the same order, so scores are the generic
  path's to the bit, and equal scores rank by row as before;
- the delta segment (documents written since the last build, a small share) is searched as before, with a mask of
  the tenant's rows.

With ``backend="numpy"`` (bm25s' scorer) only the masks come from the row lists; the scoring stays bm25s'.

All of it is dropped at every other change of the store (a meta update changes values without changing a segment)
and at a compaction. A write or a delete keeps it: the next tenant search drops the main rows deleted since (an
overwrite deletes too) and groups the delta segment's rows again, which costs the delta (a small share), not the
main segment's pass over its documents.
"""

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
from haystack import Document
from haystack.utils.filters import document_matches_filter

from components.stores.bm25.index import IndexSnapshot
from components.stores.bm25.numba_search import NumbaScorer
from components.stores.bm25.segments import NO_HITS, Hits, MainSegment, SearchableMain
from components.stores.tenants import TenantFilter, ValueRows, field_value

PAGE = 10_000  # documents read at a time while grouping a segment's rows by value
FIELDS = 8  # fields whose rows per value are kept at once (the least recently used dropped first)
OBJECT_BYTES = 2560  # what a kept tenant's Python objects (matrix, scorer, view, arrays' headers) cost, measured
Masks = tuple[np.ndarray | None, np.ndarray | None]
"""Which main-segment rows and which delta rows a filter accepts (None: all, or the segment is absent)."""
DocumentsOf = Callable[[list[str]], list[Document]]
"""The store's documents by id (shared: read, never change), for the ids of live rows."""


class TenantMatrix:
    """The weights of some rows of a main segment (ascending ``rows``), searchable as a main segment is."""

    def __init__(self, main: MainSegment, rows: np.ndarray) -> None:
        """Copy MAIN's weights of ROWS (live rows, ascending) into a CSC matrix of their own, terms renumbered.

        One vectorised pass over all of MAIN's postings (milliseconds per million): the matrix is term-major, so the
        postings of ROWS are spread over every term's list, and no document-major copy is kept to read them alone.
        """
        scores = main.bm25.scores
        data, indices, indptr = (np.asarray(scores[name]) for name in ("data", "indices", "indptr"))
        if not len(rows):
            data, indices, indptr = data[:0], indices[:0], np.zeros(1, dtype=indptr.dtype)
        inside = np.zeros(main.n_docs, dtype=bool)
        inside[rows] = True
        keep = inside[indices]
        kept_before = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
        per_term = kept_before[indptr[1:]] - kept_before[indptr[:-1]]
        self.terms = np.flatnonzero(per_term)  # the global term ids this tenant holds, ascending
        local = np.cumsum(inside, dtype=np.int64) - 1  # a row's number among ROWS
        sub_indptr = np.zeros(len(self.terms) + 1, dtype=indptr.dtype)
        np.cumsum(per_term[self.terms], out=sub_indptr[1:])
        self.main = main
        self.rows = rows
        arrays = {
            "data": np.ascontiguousarray(data[keep]),
            "indices": local[indices[keep]].astype(indices.dtype),
            "indptr": sub_indptr,
        }
        self.nbytes = sum(array.nbytes for array in arrays.values()) + self.terms.nbytes
        """Bytes of this copy's arrays (the rows are the ``ValueRows``' own, not counted)."""
        self._scorer = NumbaScorer({**arrays, "num_docs": len(rows)})

    def search(self, queries: list[list[int]], k: int, accept: np.ndarray | None, n_threads: int) -> list[Hits]:
        """``MainSegment.search`` over these rows only (QUERIES: global term ids; ACCEPT: over these rows): the
        same hits and scores as the main segment's with every other row masked out, rows numbered among these."""
        known = [[t for t in q if t < self.main.vocab_size] for q in queries]
        if not any(known) or not len(self.rows):
            return [NO_HITS] * len(queries)
        floors = self.main.floor_base(known)  # the whole index's: the weights were computed with its statistics
        positions = [np.searchsorted(self.terms, q) for q in known]
        local = [
            [int(p) for p, t in zip(found.tolist(), q, strict=True) if p < len(self.terms) and self.terms[p] == t]
            for found, q in zip(positions, known, strict=True)
        ]
        return self._scorer.search(local, k, accept, floors, n_threads)


@dataclasses.dataclass(frozen=True)
class TenantView:
    """A main segment as one tenant sees it (a ``SearchableMain``): its rows (ids in row order), searched through its
    ``TenantMatrix``."""

    matrix: TenantMatrix
    ids: list[str]
    alive: np.ndarray  # every row alive: the row lists hold live rows only

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    def search(self, queries: list[list[int]], k: int, accept: np.ndarray | None, n_threads: int) -> list[Hits]:
        """Hits over the tenant's rows, numbered among them (what ``IndexSnapshot`` asks of its main segment)."""
        return self.matrix.search(queries, k, accept, n_threads)


class BM25Tenants:
    """One store's rows per value of the fields its tenant filters named, and its tenants' matrices."""

    def __init__(self) -> None:
        self._main: OrderedDict[str, ValueRows] = OrderedDict()
        self._delta: OrderedDict[str, ValueRows] = OrderedDict()
        self._views: OrderedDict[tuple[str, Any], TenantView] = OrderedDict()
        self._held = 0  # bytes of the views in self._views (``_cost``)
        self._owner: tuple[object, object] = (None, None)
        self._stale = False  # documents were written or deleted since the row lists were read (``rows_changed``)

    def clear(self) -> None:
        """Forget everything, the segments it was built for included: the store changed otherwise than by a write or
        a delete (a meta update, a failed change, a reload), or compacted its index, and an old segment must not stay
        alive for this cache's sake."""
        self._main, self._delta = OrderedDict(), OrderedDict()
        self._views.clear()
        self._held = 0
        self._owner = (None, None)
        self._stale = False

    def rows_changed(self) -> None:
        """Documents were written or deleted, nothing else changed: the main segment's row lists are brought up to
        date at the next search (``_refresh``), not read again."""
        self._stale = True

    def _refresh(self, snapshot: IndexSnapshot[MainSegment]) -> None:
        """Bring the row lists up to SNAPSHOT: those of a new main segment (a compaction) read again; of the same
        one, its deleted rows dropped (a main row is never written again: a write goes to the delta); those of a
        new delta segment read again (it is rebuilt, rows renumbered, at every change of it). Views of tenants whose
        main rows did not change stay (``ValueRows.updated`` keeps their arrays)."""
        if self._owner[0] is not snapshot.main:
            self.clear()
        elif self._stale:
            for field, values in self._main.items():
                self._main[field] = values.updated(snapshot.alive)
        if self._owner[1] is not snapshot.delta:
            self._delta = OrderedDict()
        self._owner = (snapshot.main, snapshot.delta)
        self._stale = False

    def masks(self, snapshot: IndexSnapshot[MainSegment], documents_of: DocumentsOf, tenant: TenantFilter) -> Masks:
        """The generic path's masks (main rows, delta rows) for TENANT's filter, from the row lists."""
        main_rows, delta_rows = self._rows(snapshot, documents_of, tenant)
        main = None
        if snapshot.main is not None:
            main = np.zeros(snapshot.main.n_docs, dtype=bool)
            main[main_rows] = True
        return main, self._delta_mask(snapshot, delta_rows)

    def view(
        self, snapshot: IndexSnapshot[MainSegment], documents_of: DocumentsOf, tenant: TenantFilter
    ) -> tuple[IndexSnapshot[TenantView], np.ndarray | None, np.ndarray | None]:
        """SNAPSHOT as TENANT sees it (its main segment the tenant's live rows: ``TenantView``), with the masks of
        the rows (among those) and of the delta rows that also match the rest of the filter (None: all do)."""
        main_rows, delta_rows = self._rows(snapshot, documents_of, tenant)
        assert snapshot.main is not None
        tenant_rows = self._main[tenant.field].rows(tenant.value)
        view = self._view(snapshot.main, (tenant.field, tenant.value), tenant_rows)
        accept = None
        if len(main_rows) < len(tenant_rows):  # the rest of an AND dropped some of the tenant's rows
            accept = np.isin(tenant_rows, main_rows, assume_unique=True)
        seen = IndexSnapshot(snapshot.version, snapshot.vocab, view, view.alive, snapshot.delta, deleted=False)
        return seen, accept, self._delta_mask(snapshot, delta_rows)

    def _rows(
        self, snapshot: IndexSnapshot[MainSegment], documents_of: DocumentsOf, tenant: TenantFilter
    ) -> tuple[np.ndarray, np.ndarray]:
        """The main and delta rows matching TENANT's whole filter (ascending)."""
        self._refresh(snapshot)
        found = []
        for segment, kept, live in (
            (snapshot.main, self._main, snapshot.alive),
            (snapshot.delta, self._delta, None),
        ):
            if segment is None:
                found.append(np.empty(0, np.int64))
                continue
            if tenant.field not in kept:
                if len(kept) >= FIELDS:  # the least recently used field goes
                    kept.popitem(last=False)
                kept[tenant.field] = _grouped(segment.ids, live, documents_of, tenant.field)
            kept.move_to_end(tenant.field)
            rows = kept[tenant.field].rows(tenant.value)
            found.append(_matching(rows, segment.ids, documents_of, tenant.rest))
        return found[0], found[1]

    @staticmethod
    def _delta_mask(snapshot: IndexSnapshot[SearchableMain], rows: np.ndarray) -> np.ndarray | None:
        if snapshot.delta is None:
            return None
        mask = np.zeros(len(snapshot.delta.ids), dtype=bool)
        mask[rows] = True
        return mask

    def _view(self, main: MainSegment, key: tuple[str, Any], rows: np.ndarray) -> TenantView:
        """The TenantView of ROWS (tenant KEY's), kept while all kept ones cost no more bytes than MAIN's matrix."""
        if not len(rows):  # no such tenant: nothing to copy, nothing to keep
            return TenantView(TenantMatrix(main, rows), [], np.ones(0, bool))
        kept = self._views.get(key)
        if kept is not None and kept.matrix.rows is rows:  # the same ValueRows: the same rows
            self._views.move_to_end(key)
            return kept
        view = TenantView(TenantMatrix(main, rows), [main.ids[row] for row in rows.tolist()], np.ones(len(rows), bool))
        budget = sum(np.asarray(main.bm25.scores[name]).nbytes for name in ("data", "indices", "indptr"))
        if kept is not None:
            self._held -= _cost(self._views.pop(key))
        while self._views and self._held + _cost(view) > budget:
            self._held -= _cost(self._views.popitem(last=False)[1])
        self._views[key] = view
        self._held += _cost(view)
        return view


def _cost(view: TenantView) -> int:
    """Bytes a kept VIEW holds: its matrix's arrays, its id list, its alive mask, and ``OBJECT_BYTES``."""
    return int(view.matrix.nbytes + 8 * len(view.ids) + view.alive.nbytes + OBJECT_BYTES)


def _grouped(ids: list[str], alive: np.ndarray | None, documents_of: DocumentsOf, field: str) -> ValueRows:
    """The live rows of a segment holding IDS (ALIVE: its live rows, None: all), grouped by FIELD's value."""
    rows = np.flatnonzero(alive) if alive is not None else np.arange(len(ids))
    pairs: list[tuple[int, Any]] = []
    for start in range(0, len(rows), PAGE):
        page = rows[start : start + PAGE].tolist()
        documents = documents_of([ids[row] for row in page])
        pairs += [(row, field_value(document, field)) for row, document in zip(page, documents, strict=True)]
    return ValueRows(pairs)


def _matching(rows: np.ndarray, ids: list[str], documents_of: DocumentsOf, rest: dict[str, Any] | None) -> np.ndarray:
    """Those of ROWS whose documents match REST (all of them when None)."""
    if rest is None or not len(rows):
        return rows
    documents = documents_of([ids[row] for row in rows.tolist()])
    keep = np.array([document_matches_filter(rest, document) for document in documents], dtype=bool)
    matching: np.ndarray = rows[keep]
    return matching
