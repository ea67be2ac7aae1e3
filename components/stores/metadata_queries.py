"""Haystack's four metadata queries, and their ``*_async`` twins, for any store with a correct ``filter_documents``.

UIs and agents call these to learn what a corpus can be filtered by: which meta fields exist and their types, a
field's range, its distinct values (searchable and paged), how many distinct values each field has under a
filter. ``MetadataQueries`` computes them once, over the store's own ``filter_documents``, so the FAISS, BM25 and
Milvus stores answer alike and each store's filter semantics (and filter errors) apply unchanged. A store that
can answer faster from its own index may override a method; the async twins call whichever method the store has.

The answers are those of Haystack's ``InMemoryDocumentStore``:

- a field is named with or without the ``meta.`` prefix (one prefix is removed); a field no document has is
  ``0`` distinct values, ``{"min": None, "max": None}``, ``([], 0)``; a ``None`` value counts as no value;
- distinct means distinct by type and value, at every nesting level: ``1``, ``1.0``, ``True`` and ``"1"`` are four
  values, as are ``[1]`` and ``[True]``. Here ``count_unique_metadata_by_filter`` counts exactly what
  ``get_metadata_field_unique_values`` lists (InMemory's count merges ``1``, ``1.0`` and ``True``);
- min/max take ``int``/``float``/``str`` values (Python counts a bool as an int); a field that mixes numbers
  and strings has no order, so its answer is ``{"min": None, "max": None}``;
- a field's type is that of its last value in ``filter_documents`` order: ``boolean``, ``int``, ``float``,
  else ``keyword``.

A parameter of the wrong kind (a field name that is not a string, a negative ``from_``) is a ``ValueError`` naming
it, where InMemory raises an AttributeError or returns a slice from the end.
"""

import asyncio
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from haystack import Document

MinMax = dict[str, Any]


class MetadataQueries:
    """Mixin: the metadata queries of Haystack's document store test suites, over ``filter_documents``."""

    filter_documents: Callable[..., list[Document]]  # the store's own: (filters: dict | None = None) -> documents

    def count_unique_metadata_by_filter(self, filters: dict[str, Any], metadata_fields: list[str]) -> dict[str, int]:
        """
        How many distinct values each of ``metadata_fields`` has among the documents matching ``filters``.

        :param filters: Haystack filters; ``{}`` or ``None`` for every document.
        :param metadata_fields: Field names, with or without the ``meta.`` prefix.
        :returns: Each field name without the prefix, mapped to its number of distinct non-None values.
        """
        keys = _field_keys(metadata_fields)
        documents = self.filter_documents(filters or None)
        return {key: len(_distinct_values(documents, key)) for key in keys}

    def get_metadata_fields_info(self) -> dict[str, dict[str, str]]:
        """Each meta field holding a non-None value, as ``{"type": "boolean" | "int" | "float" | "keyword"}``."""
        types: dict[str, str] = {}
        for document in self.filter_documents(None):
            for key, value in document.meta.items():
                if value is not None:
                    types[key] = _type_name(value)
        return {key: {"type": name} for key, name in types.items()}

    def get_metadata_field_min_max(self, metadata_field: str) -> MinMax:
        """
        The smallest and largest value of ``metadata_field`` over all documents.

        :param metadata_field: The field name, with or without the ``meta.`` prefix.
        :returns: ``{"min": ..., "max": ...}``; both None when the field has no number or string values, or mixes
            numbers and strings.
        """
        key = _field_key(metadata_field, "metadata_field")
        values = [value for d in self.filter_documents(None) if isinstance(value := d.meta.get(key), int | float | str)]
        numbers = all(isinstance(value, int | float) for value in values)
        if not values or not (numbers or all(isinstance(value, str) for value in values)):
            return {"min": None, "max": None}
        return {"min": min(values), "max": max(values)}

    def get_metadata_field_unique_values(
        self,
        metadata_field: str,
        search_term: str | None = None,
        from_: int = 0,
        size: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> tuple[list[Any], int]:
        """
        One page of the distinct values of ``metadata_field`` among the documents matching ``filters``.

        :param metadata_field: The field name, with or without the ``meta.`` prefix.
        :param search_term: When given, only values whose text contains it, ignoring case (the value's text, never
            the document's content).
        :param from_: How many values to skip; values are ordered by their text, then their type's name.
        :param size: The most values to return.
        :param filters: Haystack filters; None or ``{}`` for every document.
        :returns: The page of values, in their stored types, and how many distinct values there are in all.
        """
        key = _field_key(metadata_field, "metadata_field")
        if search_term is not None and not isinstance(search_term, str):
            raise ValueError(f"search_term must be a string or None, got {type(search_term).__name__}")
        _check_count("from_", from_)
        _check_count("size", size)
        values = list(_distinct_values(self.filter_documents(filters or None), key).values())
        if search_term:
            values = [value for value in values if search_term.lower() in str(value).lower()]
        values.sort(key=lambda value: (str(value), type(value).__name__))
        return values[from_ : from_ + size], len(values)

    async def count_unique_metadata_by_filter_async(
        self, filters: dict[str, Any], metadata_fields: list[str]
    ) -> dict[str, int]:
        """Async ``count_unique_metadata_by_filter``: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.count_unique_metadata_by_filter, filters, metadata_fields)

    async def get_metadata_fields_info_async(self) -> dict[str, dict[str, str]]:
        """Async ``get_metadata_fields_info``: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.get_metadata_fields_info)

    async def get_metadata_field_min_max_async(self, metadata_field: str) -> MinMax:
        """Async ``get_metadata_field_min_max``: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.get_metadata_field_min_max, metadata_field)

    async def get_metadata_field_unique_values_async(
        self,
        metadata_field: str,
        search_term: str | None = None,
        from_: int = 0,
        size: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> tuple[list[Any], int]:
        """Async ``get_metadata_field_unique_values``: the same call, run in a worker thread."""
        return await asyncio.to_thread(
            self.get_metadata_field_unique_values, metadata_field, search_term, from_, size, filters
        )


def _field_key(name: Any, parameter: str) -> str:
    """The meta key a field name refers to: ``name`` without one leading ``meta.``."""
    if not isinstance(name, str):
        kind = type(name).__name__
        raise ValueError(f"{parameter} must be a field name like 'category' or 'meta.category', got {kind}")
    return name.removeprefix("meta.")


def _field_keys(names: Any) -> list[str]:
    """The meta keys of a list of field names, each checked as ``metadata_fields[i]``."""
    if not isinstance(names, list | tuple):
        raise ValueError(f"metadata_fields must be a list of field names, got {type(names).__name__}")
    return [_field_key(name, f"metadata_fields[{i}]") for i, name in enumerate(names)]


def _check_count(name: str, value: Any) -> None:
    """Refuse a page offset or size that is not an integer >= 0 (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")


def _distinct_values(documents: Iterable[Document], key: str) -> dict[Hashable, Any]:
    """The non-None values of meta ``key``, first occurrence of each, keyed by their type-and-value identity."""
    distinct: dict[Hashable, Any] = {}
    for document in documents:
        value = document.meta.get(key)
        if value is not None:
            distinct.setdefault(_identity(value), value)
    return distinct


def _identity(value: Any) -> Hashable:
    """A hashable stand-in for a meta value that equals another's only when both types and values match, nested."""
    if isinstance(value, list | tuple):
        return type(value).__name__, tuple(_identity(item) for item in value)
    if isinstance(value, dict):
        return "dict", frozenset((_identity(k), _identity(v)) for k, v in value.items())
    return type(value).__name__, value


def _type_name(value: Any) -> str:
    """The field type Haystack's stores report for a value: boolean, int, float, else keyword."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int"
    return "float" if isinstance(value, float) else "keyword"
