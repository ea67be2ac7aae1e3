"""A FAISS store's tenant filters (``components.stores.tenants``): rows per value, and a Flat index per tenant.

The generic filtered search decodes every document to test the filter, then asks FAISS for the best vectors
among the matching rows with an ``IDSelector``, which FAISS tests against every vector of the index: both cost the
whole corpus, whatever the tenant's share. Here

- the rows of each value of a field come from one SQL pass over the document table (the field's JSON text,
  ``document -> path``, read by Python's JSON: SQLite's ``json_extract`` would cut a string at its first NUL and
  file ``"acme\x00evil"`` under ``"acme"``; no document decoded except the few whose value is not a string or
  null), kept until the store changes (after a write or a delete, brought up to date instead: ``_refresh``);
- for an exact Flat index (``FAISSVectorIndex.exact_flat``), the tenant's vectors are copied once into a Flat
  index of their own, kept while all the copies hold no more vectors than the budget (a quarter of the store's
  vectors, and at least ``MIN_BUDGET``; least recently used dropped first), and searched whole (or, for the rest
  of an ``AND``, with a selector of the rows that pass it): a search costs the tenant's share of the corpus. A
  tenant larger than the budget is searched in the store's index with a selector of its rows (``flat_search``
  answers None): copying its vectors at every search would cost more than that scan. FAISS scores a vector with
  the same arithmetic with or without a selector, so the scores are the generic path's to the bit
  (``tests/components/stores/test_tenant_filters.py`` compares both, on both sides of FAISS's switch to BLAS at
  20 queries);
- for other index types (HNSW, IVF, PQ: approximate, where a smaller index would give other answers) the generic
  FAISS call runs, with the tenant's rows as candidates: the corpus scan of the filter is what is saved.
"""

import json
from collections import OrderedDict
from typing import Any

import faiss
import numpy as np
from haystack.utils.filters import document_matches_filter

from components.stores.faiss.sqlite_document_table import BATCH, SQLiteDocumentTable
from components.stores.faiss.vector_index import FAISSVectorIndex, prepare
from components.stores.filter_sql import json_path
from components.stores.tenants import TenantFilter, ValueRows, field_value

MIN_BUDGET = 10_000
"""Vectors the Flat indexes of tenants may hold together: a quarter of the store's vectors, and at least this many."""
_FIELDS = 8  # fields whose rows per value are kept at once (the least recently used dropped first)
_AS_READ = ("text", "null", None)  # JSON types read without decoding the document (None: no such key)


def meta_values(table: SQLiteDocumentTable, field: str, after: int = -1) -> list[tuple[int, Any]]:
    """(row, value of FIELD) for the embedded rows of TABLE above AFTER, read in one SQL pass (``json_values``): a
    string value from its JSON text (``_string``), any other (a number, a boolean, a list) from the decoded
    document, as Haystack reads it.

    :raises DocumentStoreError: the table cannot be read (naming SQLite's reason).
    """
    found = table.json_values(json_path(field), after)
    pairs = [
        (row, _string(text) if kind == "text" and text is not None else None)
        for row, kind, text in found
        if kind in _AS_READ
    ]
    pairs += _decoded_values(table, [row for row, kind, _ in found if kind not in _AS_READ], field)
    return pairs


def _string(text: str) -> str:
    """The string whose JSON text is TEXT (``"acme"``): read by Python's JSON where it holds an escape (``\\u0000``
    among them, which SQLite's ``json_extract`` would turn into a NUL and cut the string at)."""
    value: str = json.loads(text) if "\\" in text else text[1:-1]
    return value


def _decoded_values(table: SQLiteDocumentTable, rows: list[int], field: str) -> list[tuple[int, Any]]:
    """(row, value of FIELD) for ROWS, read from their decoded documents (values SQLite's JSON does not give as
    Python does: numbers, booleans, lists, and documents holding NaN, which only Python's JSON reads), ``BATCH`` at
    a time: only one batch of decoded documents is held at once."""
    pairs = []
    for start in range(0, len(rows), BATCH):
        documents = table.decoded_rows(rows[start : start + BATCH])
        pairs += [(row, field_value(document, field)) for row, document in documents.items()]
    return pairs


class FAISSTenants:
    """One store's rows per value of the fields its tenant filters named, and its tenants' Flat indexes."""

    def __init__(self) -> None:
        self._fields: OrderedDict[str, ValueRows] = OrderedDict()
        self._flats: OrderedDict[tuple[str, Any], tuple[np.ndarray, faiss.IndexFlat]] = OrderedDict()
        self._held = 0  # vectors in self._flats
        self._owner: tuple[object, object] = (None, None)
        self._stale = False  # documents were written or deleted since self._fields were read (``rows_changed``)

    def clear(self) -> None:
        """Forget everything, the index and table it was built for included: the store changed otherwise than by a
        write or a delete (a meta update, a failed change, a reload), or holds another table or index, and an old
        index must not stay alive for this cache's sake."""
        self._fields.clear()
        self._flats.clear()
        self._held = 0
        self._owner = (None, None)
        self._stale = False

    def rows_changed(self) -> None:
        """Documents were written under new rows or deleted, nothing else changed: the row lists are brought up to
        date at the next search (``_refresh``), not read again."""
        self._stale = True

    def _refresh(self, table: SQLiteDocumentTable) -> None:
        """Bring the kept row lists up to TABLE's rows after writes and deletes: deleted rows dropped, and the
        values of the rows written since read in one SQL pass over those rows alone. A row is never reused
        (``RowWrites``: ``_next_row`` counts up), so the rows above a list's ``high`` are exactly the new ones.
        The Flat indexes of tenants whose rows did not change stay (``ValueRows.updated`` keeps their arrays)."""
        self._stale = False
        if not self._fields:
            return
        rows = table.embedded_rows()
        alive = np.zeros(max(values.high for values in self._fields.values()) + 1, dtype=bool)
        alive[rows[rows < len(alive)]] = True
        for field, values in self._fields.items():
            self._fields[field] = values.updated(alive, meta_values(table, field, values.high))

    def _own(self, table: SQLiteDocumentTable, vectors: FAISSVectorIndex | None) -> None:
        """Forget what was built for another table or index object than TABLE and VECTORS."""
        if self._owner[0] is not table or self._owner[1] is not vectors:
            self.clear()
            self._owner = (table, vectors)

    def candidates(
        self, table: SQLiteDocumentTable, vectors: FAISSVectorIndex | None, tenant: TenantFilter
    ) -> tuple[np.ndarray, np.ndarray]:
        """The tenant's embedded rows (ascending, int64), and those of them that match the whole filter."""
        self._own(table, vectors)
        if self._stale:
            self._refresh(table)
        values = self._fields.get(tenant.field)
        if values is None:
            values = self._fields[tenant.field] = ValueRows(meta_values(table, tenant.field))
            if len(self._fields) > _FIELDS:
                self._fields.popitem(last=False)
        self._fields.move_to_end(tenant.field)
        rows = values.rows(tenant.value)
        if tenant.rest is None or not len(rows):
            return rows, rows
        documents = table.documents(rows.tolist(), with_embedding=False)
        keep = [document_matches_filter(tenant.rest, document) for document in documents]
        return rows, rows[np.asarray(keep, dtype=bool)]

    def flat_search(
        self,
        vectors: FAISSVectorIndex,
        metric: str,
        queries: np.ndarray,
        k: int,
        tenant: TenantFilter,
        rows: tuple[np.ndarray, np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(Q, k) scores and rows of the best of ROWS[1] (matching rows among the tenant's ROWS[0]) for QUERIES,
        from the tenant's own Flat index: as the store's Flat index with a selector answers (k <= matching rows).
        None when the tenant holds more vectors than the budget: the store's index with a selector is cheaper then."""
        tenant_rows, matching = rows
        flat = self._flat(vectors, metric, (tenant.field, tenant.value), tenant_rows)
        if flat is None:
            return None
        if len(matching) == len(tenant_rows):
            distances, positions = flat.search(prepare(queries, metric), k)
        else:  # the rest of an AND dropped some of the tenant's rows
            params = faiss.SearchParameters()
            selector = faiss.IDSelectorBatch(np.searchsorted(tenant_rows, matching).astype(np.int64))
            params.sel = selector  # kept alive by `selector` until the search returns
            distances, positions = flat.search(prepare(queries, metric), k, params=params)
        found = np.where(positions >= 0, tenant_rows[np.maximum(positions, 0)], -1)
        return (-distances if metric == "l2" else distances), found

    @property
    def kept_flats(self) -> int:
        """Tenants whose Flat index is kept (what a test of the fast path can see)."""
        return len(self._flats)

    def _flat(
        self, vectors: FAISSVectorIndex, metric: str, key: tuple[str, Any], rows: np.ndarray
    ) -> faiss.IndexFlat | None:
        """The Flat index of ROWS' vectors (the tenant KEY's), kept within the budget once built; None when ROWS
        alone exceed the budget."""
        kept = self._flats.get(key)
        if kept is not None and kept[0] is rows:  # the same ValueRows: the same rows
            self._flats.move_to_end(key)
            return kept[1]
        budget = max(vectors.ntotal // 4, MIN_BUDGET)
        if len(rows) > budget:
            return None
        flat = faiss.IndexFlat(vectors.dim, faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT)
        flat.add(vectors.reconstruct(rows))  # as the store's index holds them (normalised for cosine)
        if kept is not None:
            self._held -= len(self._flats.pop(key)[0])
        while self._flats and self._held + len(rows) > budget:
            self._held -= len(self._flats.popitem(last=False)[1][0])
        self._flats[key] = (rows, flat)
        self._held += len(rows)
        return flat
