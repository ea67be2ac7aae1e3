"""The documents a Haystack filter may match, narrowed by SQLite before Python decides.

A store opened from disk keeps its documents as JSON text in ``documents.sqlite`` and answers a filter by decoding
every document and asking Haystack's ``document_matches_filter``: 8 s at 1M short passages, however few match.
``candidate_clause`` turns the parts of a filter that SQLite can judge into a condition on that JSON column, so that
only the documents passing it are decoded; Haystack's own function then decides on each of them, as before. The
answer is unchanged because the condition holds for every document the filter matches *and* for every document on
which Haystack would raise (a string compared with ``>``): it may let through more, never fewer
(tests/components/stores/test_filter_sql.py checks that against ``document_matches_filter`` on random documents and
filters).

What SQLite judges, on ``json_extract(document, '$."meta"."key"')`` (``id``, ``content`` and legacy fields without
``meta.`` too): ``==`` and ``in`` with strings, numbers, booleans and None; ``>``, ``>=``, ``<``, ``<=`` with numbers
(a document whose value is not a number passes, for Haystack to judge or refuse); ``AND`` and ``OR`` of those. An
``AND`` narrows by its conditions up to the first one on which Haystack may raise, that one included: Haystack
evaluates them in order, so the later ones never see a document it raised on.
Everything else passes every document: ``!=``, ``not in`` and ``NOT`` (the complement of a superset is no
superset), date-like strings (Haystack's ``==`` equates ``2024-01-01`` with ``2024-01-01T00:00``), strings holding
NUL (SQLite's JSON cuts them there), keys holding a quote, a backslash or a control character (which the stored
JSON escapes and SQLite's paths cannot name), numbers beyond what SQLite compares exactly, and malformed
conditions, so that Haystack raises on them as it always did. A document whose JSON SQLite cannot parse (a NaN a
meta value held) passes. A filter larger than one SQLite statement takes (more than 30,000 values, chains of 500
conditions, ``AND`` and ``OR`` alternating more than 16 levels deep) is not narrowed at all.
"""

import math
import re
from dataclasses import dataclass, fields
from typing import Any

from haystack import Document

from components.stores.tenant_fields import looks_like_date

Clause = tuple[str, list[Any]]
"""An SQL condition and its parameters, in order."""

_ANY: Clause = ("1", [])
_EXTRACTED = "json_extract(document, ?)"  # the value at a JSON path (a parameter: filters may come from requests)
_DOCUMENT_FIELDS = frozenset(field.name for field in fields(Document))
_JSON_FIELDS = ("id", "content")  # Document fields stored as JSON values of the document
_ORDERING = frozenset((">", ">=", "<", "<="))
_UNLABELLED = re.compile(r'["\\\x00-\x1f]')
"""Characters of a key that a quoted label of SQLite's JSON paths cannot name as the stored JSON (escaped there)."""
_MAX_DEPTH = 500  # SQLite refuses expression trees deeper than 1,000
_MAX_LEVELS = 16  # and AND / OR alternating 28 levels deep overflows its parser ("parser stack overflow")
_MAX_PARAMETERS = 30_000  # SQLite refuses statements of more than 32,766 parameters
_EXACT_FLOAT = 2**53  # numbers SQLite compares with an integer as Python does: every integer up to it is a float


def candidate_clause(filters: dict[str, Any]) -> Clause | None:
    """A condition on the ``document`` column that every document FILTERS matches (or raises on) meets, or None when
    no part of FILTERS narrows the documents."""
    judged = _judged(filters)
    too_large = judged.depth > _MAX_DEPTH or judged.levels > _MAX_LEVELS or len(judged.clause[1]) > _MAX_PARAMETERS
    if judged.clause is _ANY or too_large:
        return None  # nothing narrows, or more than SQLite takes in one statement: every document is read
    text, parameters = judged.clause
    return f"(NOT json_valid(document) OR {text})", parameters


@dataclass(frozen=True)
class _Judged:
    """One filter node as SQLite can judge it: a condition every document it matches or raises on meets (``_ANY``:
    every document), and whether Haystack may raise on some document there (then no later sibling of an ``AND`` may
    narrow: Haystack never evaluates them on a document it raised on)."""

    clause: Clause
    may_raise: bool
    depth: int = 1  # how deep SQLite's expression tree of the clause is (``A AND B AND C``: a chain of 3)
    levels: int = 0  # how many AND / OR nodes deep it is, once flattened (``_flattened``)


_UNJUDGED = _Judged(_ANY, may_raise=True)  # what SQLite does not judge may raise (a malformed node always does)


def _judged(condition: Any) -> _Judged:
    """One filter node (see the module docstring)."""
    if not isinstance(condition, dict):
        return _UNJUDGED
    if "field" not in condition:
        return _logic(condition)
    path = _json_path(condition["field"])
    if path is None or not {"operator", "value"} <= condition.keys():
        return _UNJUDGED
    operator, value = condition["operator"], condition["value"]
    if operator == "==":  # ``in`` of one value
        return _exact(_one_of(path, [value]))
    if operator == "in" and isinstance(value, list):
        return _exact(_one_of(path, value))
    if operator in _ORDERING and _is_exact_number(value):  # a document holding a string or a list raises there
        not_number = f"typeof({_EXTRACTED}) NOT IN ('integer', 'real')"
        text = f"({_EXTRACTED} IS NOT NULL AND ({not_number} OR {_EXTRACTED} {operator} ?))"
        return _Judged((text, [path, path, path, value]), may_raise=True, depth=3)
    return _UNJUDGED


def _exact(clause: Clause) -> _Judged:
    """An ``==`` or ``in`` node: Haystack never raises on one (``_ANY``: not judged, so it may)."""
    return _Judged(clause, may_raise=clause is _ANY)


def _logic(condition: dict[str, Any]) -> _Judged:
    """AND and OR of the conditions' clauses; NOT and anything malformed pass every document."""
    conditions = condition.get("conditions")
    if not isinstance(conditions, list) or condition.get("operator") not in ("AND", "OR"):
        return _UNJUDGED
    judged = [_judged(item) for item in _flattened(condition["operator"], conditions)]
    may_raise = any(node.may_raise for node in judged)
    if condition["operator"] == "OR":
        if any(node.clause is _ANY for node in judged):
            return _Judged(_ANY, may_raise)
        return _joined("OR", judged, may_raise) if judged else _Judged(("0", []), may_raise)
    evaluated = next((i + 1 for i, node in enumerate(judged) if node.may_raise), len(judged))
    narrowing = [node for node in judged[:evaluated] if node.clause is not _ANY]
    return _joined("AND", narrowing, may_raise) if narrowing else _Judged(_ANY, may_raise)


def _flattened(operator: str, conditions: list[Any]) -> list[Any]:
    """CONDITIONS with each one that is itself an OPERATOR (``AND`` in an ``AND``, ``OR`` in an ``OR``) replaced by its
    own conditions, in order: Haystack evaluates them in that same order, and SQLite then parses a flat chain, not
    nested parentheses (a right-nested ``A OR (B OR (C OR ...))`` overflows its parser at about 28 levels)."""
    flat: list[Any] = []
    for item in conditions:
        nested = isinstance(item, dict) and "field" not in item and item.get("operator") == operator
        if nested and isinstance(item.get("conditions"), list):
            flat += _flattened(operator, item["conditions"])
        else:
            flat.append(item)
    return flat


def _joined(operator: str, nodes: list[_Judged], may_raise: bool) -> _Judged:
    """NODES' clauses joined by OPERATOR (``AND``, ``OR``): a chain as deep as their count, plus the deepest."""
    text = "(" + f" {operator} ".join(node.clause[0] for node in nodes) + ")"
    depth, levels = len(nodes) + max(node.depth for node in nodes), 1 + max(node.levels for node in nodes)
    return _Judged((text, [p for node in nodes for p in node.clause[1]]), may_raise, depth, levels)


def _one_of(path: str, values: list[Any]) -> Clause:
    """The documents whose value at PATH may equal one of VALUES as Haystack's ``==`` compares (``in``; ``==``: one
    value): one SQL ``IN`` list, however long; None as ``IS NULL`` (a missing key, or JSON null)."""
    if not all(value is None or _comparable(value) for value in values):
        return _ANY
    known = [value for value in values if value is not None]
    parts: list[Clause] = [(f"{_EXTRACTED} IS NULL", [path])] if len(known) < len(values) else []
    if known:
        parts.append((f"{_EXTRACTED} IN ({', '.join('?' * len(known))})", [path, *known]))
    if not parts:
        return "0", []
    return "(" + " OR ".join(text for text, _ in parts) + ")", [p for _, ps in parts for p in ps]


def _comparable(value: Any) -> bool:
    """Whether SQLite's ``=`` on the stored JSON value holds wherever Haystack's ``==`` with VALUE does."""
    if isinstance(value, str):
        return "\x00" not in value and not looks_like_date(value) and _is_unicode(value)
    return _is_exact_number(value)


def _is_unicode(text: str) -> bool:
    """Whether TEXT is valid Unicode (no lone surrogate), as SQLite's parameters must be; no stored text holds one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_path(field: Any) -> str | None:
    """The JSON path of FIELD in a stored document, as Haystack resolves it (``meta.a.b``; a legacy field without
    ``meta.``), or None where SQLite cannot follow it as Haystack does."""
    if not isinstance(field, str):
        return None
    if "." in field:
        keys = field.split(".")
        if keys[0] != "meta":  # Haystack reads another root's attribute, which no JSON object of the row holds
            return None
    elif field in _JSON_FIELDS:
        keys = [field]
    elif field in _DOCUMENT_FIELDS:  # meta itself, score, blob, embeddings: not judged
        return None
    else:  # a legacy field: Haystack reads it from meta
        keys = ["meta", field]
    if any(not key or _UNLABELLED.search(key) or not _is_unicode(key) for key in keys):
        return None
    return json_path(".".join(keys))


def json_path(field: str) -> str:
    """The SQLite JSON path of FIELD (``meta.a.b``) in a stored document (``$."meta"."a"."b"``): its keys as quoted
    labels, which must hold no quote, backslash or control character (``_UNLABELLED``)."""
    return "$" + "".join(f'."{key}"' for key in field.split("."))


def _is_exact_number(value: Any) -> bool:
    """A bool, an int or a finite float that SQLite compares with any stored number as Python does."""
    if isinstance(value, bool):
        return True
    return isinstance(value, int | float) and math.isfinite(value) and abs(value) < _EXACT_FLOAT
