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

A string literal is written as JSON, and Milvus's parser refuses the escapes JSON gives the control characters
U+0000-U+0008, U+000B, U+000C and U+000E-U+001F (``\\u0001``, ``\\b``, ``\\f``; tab, newline and carriage return
parse), and a lone surrogate cannot be sent at all: a comparison with such a string (or on a meta key holding
one) narrows nothing and is checked by the matcher (``sayable``).

The tenant (``meta.<partition_key_field>``) is a VARCHAR field every document has, filtered like ``id``:
``== "a"`` and ``in [...]`` become ``tenant in ["a", ...]``, which Milvus reads to search only the partitions of
those tenants (a tenant value that is not ``sayable`` is left out: no stored tenant holds one,
``records.check_tenant``). A filter on ``sparse_embedding`` is checked by the matcher on the stored vectors. When a
filter is inexact, its exact tenant conditions (``tenant_expression``) are kept beside the ids it selects, so a
server still searches only those tenants' partitions.
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
UNSAYABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
"""Characters no Milvus string literal holds: control characters whose JSON escape Milvus's parser refuses (all
but tab, newline and carriage return), and lone surrogates (not UTF-8, so they cannot be sent)."""


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
    """A translated filter: the Milvus ``expression`` ('' everything, None nothing) and whether it is exact;
    ``tenant_expression``: the exact tenant conditions of its top-level AND (None: it has none)."""

    expression: str | None
    exact: bool
    filters: dict[str, Any] | None
    vectors: bool = False
    tenant_expression: str | None = None

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
    translator = _Translator(settings, flagged)
    part = translator.node(filters)
    return MilvusFilter(part.expr, part.exact, filters, part.vectors, translator.tenant_part(filters))


def sayable(text: str) -> bool:
    """Whether a Milvus expression can hold ``text`` as a string literal (see ``UNSAYABLE``)."""
    return UNSAYABLE.search(text) is None


def dense_expression(expression: str | None, flagged: bool) -> str | None:
    """``expression`` limited to rows with an embedding (a collection without the flag has only such rows)."""
    if not flagged or expression is None:
        return expression
    flag = f"{EMBEDDED_FIELD} == true"
    return flag if not expression else f"{flag} and ({expression})"


def ids_expression(id_field: str, ids: list[str], tenant_expression: str | None = None) -> str | None:
    """The expression selecting exactly ``ids`` (None when there are none), within ``tenant_expression`` if given
    (the ids are that tenant's already; the condition lets a server search only its partitions)."""
    if not ids:
        return None
    listed = f"{id_field} in {json.dumps(ids, ensure_ascii=False)}"
    return listed if tenant_expression is None else f"({tenant_expression}) and ({listed})"


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
            if kind in ("text", "tenant"):
                return self.text_in(name, value, tenant=kind == "tenant")
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
            return "tenant", parts[0]  # a VARCHAR every document has, as id and content
        if not all(sayable(part) for part in parts):
            return "python", ""
        return "json", "$meta" + "".join(f"[{json.dumps(p, ensure_ascii=False)}]" for p in parts)

    def equal(self, kind: str, name: str, value: Any) -> Part:
        if kind == "embedding":
            if value is not None:
                return Part("", exact=False, vectors=True)
            return Part(f"{EMBEDDED_FIELD} == false") if self.flagged else NOTHING
        if kind in ("python", "sparse"):
            return Part("", exact=False, vectors=kind == "sparse")
        if kind in ("text", "tenant"):
            return self.text_in(name, [value], tenant=kind == "tenant")
        literal = _literal(value)
        if value is None:
            return Part(f"{name} is null")
        if literal is None:
            return Part(f"{name} is not null", exact=False)
        return Part(f"{name} is not null and {name} == {literal}")

    def text_in(self, name: str, values: list[Any], tenant: bool = False) -> Part:
        """``id``/``content``/the tenant (never null): strings in one ``in``; a date string or a datetime is checked
        in Python, and so is a string Milvus cannot hold, except as a tenant (which no stored tenant equals)."""
        if any(isinstance(v, datetime) or (isinstance(v, str) and ISO_DATE_START.match(v)) for v in values):
            return UNKNOWN
        texts = [v for v in values if isinstance(v, str)]
        if not all(sayable(text) for text in texts):
            if not tenant:
                return UNKNOWN
            texts = [text for text in texts if sayable(text)]
        return Part(f"{name} in {json.dumps(texts, ensure_ascii=False)}") if texts else NOTHING

    def tenant_part(self, filters: dict[str, Any]) -> str | None:
        """The exact tenant conditions of FILTERS' top-level AND (or of FILTERS, a tenant ``==``/``in``) as one
        expression, None when there are none: what still narrows the search to those tenants' partitions."""
        key = self.settings.partition_key_field
        if key is None:
            return None
        conditions = filters["conditions"] if filters.get("operator") == "AND" else [filters]
        parts = [
            self.node(condition)
            for condition in conditions
            if condition.get("field") in (key, f"meta.{key}") and condition["operator"] in ("==", "in")
        ]
        exact = [part for part in parts if part.exact and part.expr]
        if len(exact) < 2:
            return exact[0].expr if exact else None
        return all_of(exact).expr

    def ordering(self, kind: str, name: str, field: str, operator: str, value: Any) -> Part:
        if value is None:
            return NOTHING
        _check_orderable(field, operator, value, kind)
        if kind in ("python", "embedding", "sparse", "text", "tenant"):
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
    if isinstance(value, str) and not ISO_DATE_START.match(value) and sayable(value):
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
    if kind in ("text", "tenant"):
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
