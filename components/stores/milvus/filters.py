"""Haystack filters as Milvus expressions: exact where Milvus can say it, finished by Haystack's matcher where not.

The store's filters select what ``haystack.utils.filters.document_matches_filter`` selects. Milvus's expressions
differ from that matcher (checked on Milvus Lite 3.2.2, in process and ``milvus-lite server``):

- a comparison on a missing or null meta key is "unknown", and ``not`` keeps it unknown: ``x != 2`` and
  ``not (x == 2)`` both drop documents lacking ``x``, which Haystack keeps. Each meta comparison is therefore
  guarded (``$meta["x"] is not null and $meta["x"] == 2``), which is false rather than unknown, so ``!=``,
  ``not in`` and ``NOT`` keep those documents; ``== None`` is ``is null`` (missing or null);
- ``in`` on a meta key fails on Milvus Lite when any stored value is a list, and a literal list must hold one
  type: ``in`` on a meta key is an OR of ``==``;
- Milvus has no list or dict literals, compares ISO dates as text, and cannot filter on embeddings.

A comparison Milvus cannot express exactly narrows (to the documents that have the key, or not at all) and marks
the filter inexact: the store then checks each candidate with Haystack's matcher, and searches run on the exact
ids. Values no document can be compared with are a FilterError naming the field and operator, before Milvus is
called: ``>``/``>=``/``<``/``<=`` with a list, a dict or a string that is not a date, or a number on ``id``/
``content``. One difference remains: ``>`` with a number skips stored values that are not numbers, where
Haystack's matcher raises FilterError when it meets a stored string.

The tenant (``meta.<partition_key_field>``) is a VARCHAR field every document has, filtered like ``id``:
``== "a"`` and ``in [...]`` become ``tenant in ["a", ...]``, which Milvus reads to search only the partitions of
those tenants. A filter on ``sparse_embedding`` is checked by the matcher on the stored vectors.
"""

import json
import math
import re
import reprlib
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import dateutil.parser  # type: ignore[import-untyped]  # no stubs installed
from haystack import Document
from haystack.errors import FilterError
from haystack.utils.filters import document_matches_filter

from components.checks import check_filters
from components.stores.milvus.collection import EMBEDDED_FIELD
from components.stores.milvus.settings import MilvusSettings

ORDERING = (">", ">=", "<", "<=")
DOCUMENT_FIELDS = {f.name for f in fields(Document)}
INT64 = (-(2**63), 2**63 - 1)
ISO_DATE_START = re.compile(r"\d{4}-\d{2}-\d{2}")  # a superset of what Haystack's matcher reads as a date


@dataclass(frozen=True)
class Part:
    """One node as Milvus sees it: ``expr`` '' is everything, None nothing; inexact: a superset to check."""

    expr: str | None
    exact: bool = True
    vectors: bool = False  # the check needs the documents' embeddings


EVERYTHING, NOTHING = Part(""), Part(None)
UNKNOWN = Part("", exact=False)


@dataclass(frozen=True)
class MilvusFilter:
    """A translated filter: the Milvus ``expression`` ('' everything, None nothing) and whether it is exact."""

    expression: str | None
    exact: bool
    filters: dict[str, Any] | None
    vectors: bool = False

    def keeps(self, document: Document) -> bool:
        """Whether ``document`` (a candidate the expression selected) matches: Haystack's matcher if inexact."""
        if self.exact or not self.filters:
            return True
        try:
            return document_matches_filter(self.filters, document)
        except TypeError as error:  # e.g. '>' between a stored list and a number
            raise FilterError(f"filters cannot be applied to document {document.id!r}: {error}") from None


def translate(filters: dict[str, Any] | None, settings: MilvusSettings, flagged: bool) -> MilvusFilter:
    """
    Haystack ``filters`` as a ``MilvusFilter`` for this collection (``flagged``: it records which rows have embeddings).

    :raises FilterError: naming the node, field and operator of a malformed filter or of an uncomparable value.
    """
    check_filters(filters)
    if not filters:
        return MilvusFilter("", True, None)
    part = _Translator(settings, flagged).node(filters)
    return MilvusFilter(part.expr, part.exact, filters, part.vectors)


def dense_expression(expression: str | None, flagged: bool) -> str | None:
    """``expression`` limited to rows with an embedding (a collection without the flag has only such rows)."""
    if not flagged or expression is None:
        return expression
    flag = f"{EMBEDDED_FIELD} == true"
    return flag if not expression else f"{flag} and ({expression})"


def ids_expression(id_field: str, ids: list[str]) -> str | None:
    """The expression selecting exactly ``ids`` (None when there are none)."""
    return f"{id_field} in {json.dumps(ids, ensure_ascii=False)}" if ids else None


def negate(part: Part) -> Part:
    """NOT of a two-valued part; an inexact part narrows nothing under NOT."""
    if not part.exact:
        return Part("", exact=False, vectors=part.vectors)
    if part.expr is None:
        return EVERYTHING
    return NOTHING if part.expr == "" else Part(f"not ({part.expr})")


def all_of(parts: list[Part]) -> Part:
    """AND: nothing if any part is nothing; Haystack's AND of no conditions is everything."""
    exact, vectors = all(p.exact for p in parts), any(p.vectors for p in parts)
    if any(p.expr is None for p in parts):
        return Part(None, exact, vectors)
    kept = [f"({p.expr})" for p in parts if p.expr]
    return Part(" and ".join(kept), exact, vectors)


def any_of(parts: list[Part]) -> Part:
    """OR: everything if any part is everything; Haystack's OR of no conditions is nothing."""
    exact, vectors = all(p.exact for p in parts), any(p.vectors for p in parts)
    if any(p.expr == "" for p in parts):
        return Part("", exact, vectors)
    kept = [f"({p.expr})" for p in parts if p.expr is not None]
    return Part(" or ".join(kept) if kept else None, exact, vectors)


class _Translator:
    """Translate one filter tree for one collection's field names."""

    def __init__(self, settings: MilvusSettings, flagged: bool) -> None:
        self.settings, self.flagged = settings, flagged

    def node(self, node: dict[str, Any]) -> Part:
        if "field" not in node:
            children = [self.node(child) for child in node["conditions"]]
            if node["operator"] == "OR":
                return any_of(children)
            joined = all_of(children)
            return negate(joined) if node["operator"] == "NOT" else joined
        field, operator, value = node["field"], node["operator"], node["value"]
        if operator in ("!=", "not in"):
            return negate(self.node({**node, "operator": "==" if operator == "!=" else "in"}))
        kind, name = self.target(field)
        if operator == "in":
            if kind == "text":
                return self.text_in(name, value)
            return any_of([self.equal(kind, name, item) for item in value])
        if operator == "==":
            return self.equal(kind, name, value)
        return self.ordering(kind, name, field, operator, value)

    def target(self, field: str) -> tuple[str, str]:
        """What ``field`` names: a text field of the schema, a meta JSON path, the embedding, or Python only."""
        if field == "id":
            return "text", self.settings.id_field_name
        if field == "content":
            return "text", self.settings.text_field_name
        if field == "embedding":
            return "embedding", ""
        if field == "sparse_embedding":
            return "sparse", ""
        parts = field.split(".")
        if len(parts) > 1 and parts[0] == "meta":
            parts = parts[1:]
        elif len(parts) > 1 or field in DOCUMENT_FIELDS:
            return "python", ""
        if parts == [self.settings.partition_key_field]:
            return "text", parts[0]  # the tenant: a VARCHAR every document has, as id and content
        return "json", "$meta" + "".join(f"[{json.dumps(p, ensure_ascii=False)}]" for p in parts)

    def equal(self, kind: str, name: str, value: Any) -> Part:
        if kind == "embedding":
            if value is not None:
                return Part("", exact=False, vectors=True)
            return Part(f"{EMBEDDED_FIELD} == false") if self.flagged else NOTHING
        if kind in ("python", "sparse"):
            return Part("", exact=False, vectors=kind == "sparse")
        if kind == "text":
            return self.text_in(name, [value])
        literal = _literal(value)
        if value is None:
            return Part(f"{name} is null")
        if literal is None:
            return Part(f"{name} is not null", exact=False)
        return Part(f"{name} is not null and {name} == {literal}")

    def text_in(self, name: str, values: list[Any]) -> Part:
        """``id``/``content`` (never null): strings in one ``in``; a date string or a datetime is checked in Python."""
        if any(isinstance(v, datetime) or (isinstance(v, str) and ISO_DATE_START.match(v)) for v in values):
            return UNKNOWN
        texts = [v for v in values if isinstance(v, str)]
        return Part(f"{name} in {json.dumps(texts, ensure_ascii=False)}") if texts else NOTHING

    def ordering(self, kind: str, name: str, field: str, operator: str, value: Any) -> Part:
        if value is None:
            return NOTHING
        _check_orderable(field, operator, value, kind)
        if kind in ("python", "embedding", "sparse", "text"):
            return Part("", exact=False, vectors=kind in ("embedding", "sparse"))
        literal = _literal(value)
        if literal is None or isinstance(value, str):
            return Part(f"{name} is not null", exact=False)
        return Part(f"{name} is not null and {name} {operator} {literal}")


def _literal(value: Any) -> str | None:
    """``value`` as a Milvus literal that compares as Haystack's matcher compares, or None if there is none."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if INT64[0] <= value <= INT64[1] else None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str) and not ISO_DATE_START.match(value):
        return json.dumps(value, ensure_ascii=False)
    return None


def _check_orderable(field: str, operator: str, value: Any, kind: str) -> None:
    """Refuse a ``>``/``>=``/``<``/``<=`` value that no stored value can be compared with (Haystack's rule)."""
    where = f"filters: {operator!r} on {field!r}"
    if isinstance(value, str):
        if _parses_as_date(value):
            return
        raise FilterError(f"{where} compares numbers or dates; {reprlib.repr(value)} is a string that is not a date")
    if isinstance(value, datetime):
        return
    if not isinstance(value, int | float):
        raise FilterError(f"{where} needs a number or a date, got {type(value).__name__} {reprlib.repr(value)}")
    if kind == "text":
        raise FilterError(f"{where}: {field!r} holds text, which '>'/'<' compare only as dates; got a number")


def _parses_as_date(value: str) -> bool:
    """Whether Haystack's matcher reads the string as a date (``fromisoformat``, then dateutil's parser)."""
    try:
        datetime.fromisoformat(value)
        return True
    except ValueError:
        pass
    try:
        dateutil.parser.parse(value)
        return True
    except (ValueError, OverflowError):
        return False
