"""Tenant filters: an equality on one meta field, answered from a per-value row list instead of a corpus scan.

One index often serves many users, each allowed to see only their documents, told apart by a meta field
(``meta.tenant``). Haystack's filter for that is ``{"field": "meta.tenant", "operator": "==", "value": "acme"}``,
alone or inside an ``AND`` with other conditions. Evaluated generically, such a filter decodes and tests every
document of the store; the FAISS and BM25 stores instead recognise it here (``tenant_filter``), keep for each meta
field they were asked about a list of rows per value (``ValueRows``, built once and kept until the store changes),
and search only the rows of that value, testing the other conditions of the ``AND`` on those rows alone. The
answer is the generic path's exactly: the same rows, hence the same hits and scores.

Exactness rests on how Haystack compares: ``==`` is Python's ``==`` (and, for two ISO dates, equal instants). Rows
are grouped by the field's value in a dict, whose lookup is Python's ``==`` for hashable values; so the fast path
takes only values a dict compares as Haystack does: strings that do not look like an ISO date, integers, booleans,
finite floats and None (which matches documents without the field, as Haystack's does). A document whose value
cannot be a dict key (a list, a mapping) equals none of those, and is left out. Any other filter (OR, NOT, another
operator, a date or a list as value) takes the generic path. Only the order of errors can differ: a malformed
condition that the generic path would raise on for a document of another tenant is not evaluated for it here.

What a store keeps for this is dropped at every change of the store, in the same hold of its lock as the change
(``TenantCaching``, the part both stores' search mixins share), so no search answers from rows of before a change;
after a write or a delete only, it is kept and brought up to date at the next tenant search instead
(``ValueRows.updated``: deleted rows dropped, the values of the new rows read), which costs the new rows, not the
corpus.
"""

import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from haystack import Document

from components.stores.tenant_fields import FIELD, looks_like_date

T = TypeVar("T")


@dataclass(frozen=True)
class TenantFilter:
    """A filter split into the tenant equality (``field == value``) and the rest of its ``AND`` (None: nothing)."""

    field: str
    value: Any
    rest: dict[str, Any] | None


def keyable(value: Any) -> bool:
    """Whether a filter VALUE is one a dict lookup compares exactly as Haystack's ``==`` does (module docstring)."""
    if value is None or isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return not math.isnan(value)
    return isinstance(value, str) and not looks_like_date(value)


def tenant_filter(filters: dict[str, Any] | None) -> TenantFilter | None:
    """The tenant equality of FILTERS (checked Haystack filters) and the rest of its ``AND``, or None when FILTERS is
    not one: a comparison ``meta.X == value`` (value ``keyable``), alone or among the conditions of a top-level ``AND``
    (nested ``AND``s included). The first such comparison is the tenant's; the others stay in the rest."""
    if not filters:
        return None
    conditions = _and_conditions(filters)
    for position, condition in enumerate(conditions):
        if _is_equality(condition):
            others = conditions[:position] + conditions[position + 1 :]
            rest = {"operator": "AND", "conditions": others} if others else None
            return TenantFilter(condition["field"], condition["value"], rest)
    return None


def _and_conditions(filters: dict[str, Any]) -> list[dict[str, Any]]:
    """The conditions whose conjunction FILTERS is: nested ``AND``s flattened, in order; FILTERS itself otherwise."""
    if "field" in filters or filters.get("operator") != "AND":
        return [filters]
    flat: list[dict[str, Any]] = []
    for condition in filters.get("conditions", []):
        flat.extend(_and_conditions(condition))
    return flat


def _is_equality(condition: dict[str, Any]) -> bool:
    """Whether CONDITION is ``meta.X == value`` with a ``keyable`` value."""
    field = condition.get("field")
    return (
        condition.get("operator") == "=="
        and isinstance(field, str)
        and FIELD.fullmatch(field) is not None
        and keyable(condition.get("value"))
    )


def field_value(document: Document, field: str) -> Any:
    """The value Haystack's filters read for FIELD (``meta.a.b``) of DOCUMENT: None where a key is missing or a
    step is not a mapping."""
    value: Any = document.meta
    for key in field.split(".")[1:]:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


class ValueRows:
    """The rows of each value of one field: built once from (row, value) pairs, then looked up per value, and brought
    up to date after writes and deletes (``updated``)."""

    def __init__(self, pairs: Iterable[tuple[int, Any]]) -> None:
        """Group PAIRS by value (rows kept ascending); values a dict cannot hold (lists, mappings) are left out:
        they equal no ``keyable`` filter value."""
        grouped: dict[Any, list[int]] = {}
        self.high = -1
        """The highest row of the pairs given, those left out included (-1: none): rows written later lie above."""
        for row, value in pairs:
            self.high = max(self.high, row)
            try:
                grouped.setdefault(value, []).append(row)
            except TypeError:  # unhashable: a list or a mapping
                continue
        self._rows = {value: np.sort(np.asarray(rows, dtype=np.int64)) for value, rows in grouped.items()}

    def rows(self, value: Any) -> np.ndarray:
        """The rows whose value equals VALUE (a ``keyable`` one), ascending, as int64; empty when none."""
        found = self._rows.get(value)
        return found if found is not None else np.empty(0, np.int64)

    def updated(self, alive: np.ndarray, added: Iterable[tuple[int, Any]] = ()) -> "ValueRows":
        """These row lists after deletes and writes: the rows where ALIVE (a mask over rows, longer than ``high``)
        is False dropped, and ADDED's (row, value) pairs grouped in, as ``ValueRows(pairs)`` of the rows now held
        would group them. A value whose rows did not change keeps the very same array: a copy of its tenant's data
        keyed on that array (``FAISSTenants``, ``BM25Tenants``) stays valid."""
        new = ValueRows(added)
        merged = ValueRows(())
        merged.high = max(self.high, new.high)
        for value, rows in self._rows.items():
            live = alive[rows]
            kept = rows if live.all() else rows[live]
            extra = new._rows.pop(value, None)
            if extra is not None:
                kept = np.sort(np.concatenate([kept, extra]))
            if len(kept):
                merged._rows[value] = kept
        merged._rows.update(new._rows)
        return merged

    def __len__(self) -> int:
        """Number of distinct values."""
        return len(self._rows)


class TenantCache(Protocol):
    """What a store keeps for its tenant filters (``FAISSTenants``, ``BM25Tenants``)."""

    def clear(self) -> None:
        """Forget everything, and let go of the index objects it was built for."""

    def rows_changed(self) -> None:
        """Documents were written under new rows or deleted, and nothing else changed: what is kept stays, to be
        brought up to date (``ValueRows.updated``) at the next tenant search instead of read again."""


C = TypeVar("C", bound=TenantCache)


class TenantCaching(Generic[C]):
    """The tenant side of a store's searches mixin: the store's ``TenantCache`` (made on first use, so the store's
    ``__init__`` stays light) and a ``_mutate`` that clears it, or for a change that only writes and deletes
    documents tells it so, in the same hold of the store's lock as the change: no search can run between a change
    and the cache hearing of it, and read the rows from before."""

    _lock: threading.RLock

    def _new_tenant_cache(self) -> C:
        """A fresh, empty ``TenantCache`` of the store's kind (the searches mixin's)."""
        raise NotImplementedError

    @cached_property
    def _tenant_rows(self) -> C:
        """The store's ``TenantCache``."""
        with self._lock:  # two first searches on two threads make one cache
            kept: C | None = self.__dict__.get("_tenant_rows")
            return kept if kept is not None else self._new_tenant_cache()

    def _mutate(self, change: Callable[[], tuple[T, bool]], rows_only: bool = False) -> T:
        """The store's transaction (``TransactionalStore._mutate``, next in the store's MRO), then the tenant cache
        cleared, all under one hold of the store's (re-entrant) lock. ROWS_ONLY: CHANGE only writes documents under
        new rows and deletes others (a write, a delete; no meta update, no row reused), and the cache is told so
        (``rows_changed``) instead, unless the change failed (a failed change may have left anything half done)."""
        with self._lock:
            try:
                result: T = super()._mutate(change)  # type: ignore[misc]
            except BaseException:
                self._tenant_rows.clear()
                raise
            if rows_only:
                self._tenant_rows.rows_changed()
            else:
                self._tenant_rows.clear()
            return result
