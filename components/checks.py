"""The input checks every store, retriever, embedder and ranker shares, so one bad input fails the same way everywhere.

One rule per input, raising Haystack's exception types with a message that names the input and its allowed range:

- ``top_k``: an integer in [1, 10000] (mxRAG's ``k`` range), else ``ValueError``. A message shows a bad value cut
  short (``shown``); an integer of more digits than Python reads from text (4,300) is read by ``parse_decimal`` as
  an ``OverlongInt``, which every range check refuses naming its key, so no reader fails with Python's own message.
- a query: a string of 1 to 1,048,576 characters (mxRAG's 1 MiB) holding something other than whitespace, and
  valid Unicode (no lone surrogates, which is what ``\\xff`` in a command line or a broken JSON escape becomes),
  else ``ValueError``. An empty query is an error in every mode: dense would return arbitrary neighbours of the
  empty string's vector and BM25 nothing, so neither answer means anything.
- a batch of queries: a list whose every item passes the query rule, named ``queries[i]``; an empty list is
  allowed (it has no answers). A server takes at most ``MAX_QUERIES`` queries in one request and at most
  ``MAX_PASSAGES`` (queries x ``top_k``) passages in one answer; past either it answers 413 (``needle serve``'s
  ``/search`` and its MCP tools; the remote retrievers split larger batches into requests of ``MAX_QUERIES``).
- filters: ``None``/``{}`` or a whole tree in Haystack's filter syntax (every node checked, at most 100 levels
  deep), else ``haystack.errors.FilterError`` naming the node, e.g. ``filters.conditions[1]``.
- document text: valid Unicode, so a write never fails half-way on encoding.
- ``score_threshold`` (every retriever, ranker and fusion joiner; ``needle search --min-score``): None or a finite
  real number, else ``ValueError`` naming it. Any finite value is allowed, negative ones included: scores live on
  different scales (BM25 unbounded, cosine in [-1, 1], FAISS's L2 negated, logits), see
  ``components.score_threshold``.
"""

import math
import numbers
import reprlib
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from haystack.errors import FilterError

MAX_TOP_K = 10_000
MAX_QUERIES = 10_000  # per request: a whole benchmark split (NQ test: 3,610; HotpotQA dev: 7,405) fits in one
MAX_PASSAGES = 1_000_000  # queries x top_k per request: 10,000 queries at top_k 100
MAX_QUERY_CHARS = 1_048_576
MAX_FILTER_DEPTH = 100
MAX_URL_CHARS = 2048
COMPARISON_OPERATORS = ("==", "!=", ">", ">=", "<", "<=", "in", "not in")
LOGICAL_OPERATORS = ("AND", "OR", "NOT")

PRINTABLE_INT_BITS = 14_000  # Python reads and prints at most 4,300 decimal digits (about 14,284 bits) of an int


class OverlongInt(int):
    """A decimal integer with more digits than Python reads from text (``sys.get_int_max_str_digits()``, 4,300),
    as ``parse_decimal`` meets it in a file or a flag: worth 10**4300 (sign kept), shown by its size, so that a range
    check refuses it naming its key and range instead of failing with Python's own message, which names neither."""

    digits: int

    def __new__(cls, digits: int, negative: bool = False) -> "OverlongInt":
        """The stand-in of an integer of DIGITS digits (negative when NEGATIVE)."""
        value = super().__new__(cls, (-1 if negative else 1) * 10**4300)
        value.digits = digits
        return value

    def __repr__(self) -> str:
        return f"an integer of {self.digits:,} digits"

    __str__ = __repr__


def parse_decimal(text: str) -> int:
    """TEXT as ``int`` reads it; a decimal integer past Python's limit on digits read from text is an
    ``OverlongInt`` instead of a ValueError. ``json.loads``'s ``parse_int`` hook, and the flags' and YAML's reader."""
    digits = text.strip().lstrip("+-").replace("_", "")
    limit = sys.get_int_max_str_digits()
    if 0 < limit < len(digits) and digits.isdecimal():
        return OverlongInt(len(digits), text.strip().startswith("-"))
    return int(text)


class _ShortRepr(reprlib.Repr):
    """``reprlib``'s short repr, which describes an integer too long to print by its size instead of failing."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > PRINTABLE_INT_BITS:
            return f"an integer of about {int(x.bit_length() * math.log10(2)) + 1:,} digits"
        return super().repr_int(x, level)


_SHORT_REPR = _ShortRepr()
_SHORT_REPR.maxlevel, _SHORT_REPR.maxstring, _SHORT_REPR.maxother = 3, 80, 80


def check_top_k(top_k: Any, name: str = "top_k") -> int:
    """Return ``top_k`` if it is an integer in [1, MAX_TOP_K]; else raise ValueError stating the range."""
    return check_int(name, top_k, 1, MAX_TOP_K)


def check_query(query: Any, name: str = "query") -> str:
    """Return ``query`` if it is a non-blank, valid-Unicode string of at most MAX_QUERY_CHARS characters."""
    if not isinstance(query, str):
        hint = "; pass a batch of queries to the batch component" if isinstance(query, list) else ""
        raise ValueError(f"{name} must be a string, got {type(query).__name__}{hint}")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"{name} is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS:,} (1 MiB)")
    if not query.strip():
        raise ValueError(f"{name} is empty; give at least one non-space character")
    check_unicode(query, name)
    return query


def check_queries(queries: Any, name: str = "queries") -> list[str]:
    """Return ``queries`` if it is a list of strings that each pass ``check_query`` (named ``queries[i]``)."""
    if not isinstance(queries, list):
        hint = "; pass a single query to the single-query component" if isinstance(queries, str) else ""
        raise ValueError(f"{name} must be a list of strings, got {type(queries).__name__}{hint}")
    for i, query in enumerate(queries):
        check_query(query, f"{name}[{i}]")
    return queries


def check_unicode(text: str, name: str) -> None:
    """Refuse a string that cannot be encoded as UTF-8 (a lone surrogate), naming the character position."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{name} is not valid Unicode: lone surrogate {text[exc.start]!r} at character {exc.start} "
            "(invalid UTF-8 bytes or a broken \\u escape in the input)"
        ) from None


def check_int(name: str, value: Any, low: int, high: int) -> int:
    """Return ``value`` if it is an integer in ``[low, high]`` (bools refused); else a ValueError stating the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {shown(value)}")
    return value


def check_number(name: str, value: Any, low: float, high: float, low_open: bool = False) -> float:
    """A finite real number in ``[low, high]`` (``(low, high]`` when ``low_open``), bools refused."""
    # an int compares with a float exactly, however large (math.isfinite would raise OverflowError past 1e308)
    ok = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if isinstance(value, bool) or not (ok and (value > low if low_open else value >= low) and value <= high):
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must be a finite number in {bracket}{low}, {high}], got {shown(value)}")
    return float(value)


def check_score_threshold(value: Any, name: str = "score_threshold") -> float | None:
    """None (no threshold), or VALUE as a float if it is a finite real number (bools refused: ``True`` is no score)."""
    if value is None:
        return None
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        try:
            number = float(value)
        except OverflowError:  # an int past 1e308
            number = math.inf
        if math.isfinite(number):
            return number
    raise ValueError(f"{name} must be None or a finite number (hits scoring below it are dropped), got {shown(value)}")


def check_base_url(value: Any, name: str = "base_url") -> str | None:
    """None (the service's default) or an http(s) URL of at most MAX_URL_CHARS characters naming a host."""
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_URL_CHARS:
        raise ValueError(f"{name} must be None or a string of 1..{MAX_URL_CHARS} characters, got {value!r}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{name} must start with http:// or https:// and name a host, got {value!r}")
    return value


def check_filters(filters: Any, name: str = "filters") -> None:
    """
    Refuse filters that are not ``None``, ``{}`` or a whole tree in Haystack's syntax, before anything is scanned.

    Every node is checked, not only the top one, so a malformed condition deep in an ``OR`` fails even when no
    stored document would reach it: a comparison needs a string ``field``, one of Haystack's comparison operators
    and a ``value`` (a list for ``in``/``not in``); a logical node needs ``AND``/``OR``/``NOT`` and a list of
    ``conditions``. The walk uses a stack, so a tree nested past Python's recursion limit is a FilterError too.
    """
    if filters is None or (isinstance(filters, dict) and not filters):
        return
    stack: list[tuple[str, Any, int]] = [(name, filters, 1)]
    while stack:
        where, node, depth = stack.pop()
        if depth > MAX_FILTER_DEPTH:
            raise _filter_error(f"{name} are nested deeper than {MAX_FILTER_DEPTH} levels of AND/OR/NOT")
        children = _filter_children(where, node)
        stack.extend((f"{where}.conditions[{i}]", child, depth + 1) for i, child in enumerate(children))


def _filter_children(where: str, node: Any) -> list[Any]:
    """Check one filter node and return its sub-conditions (none for a comparison)."""
    if not isinstance(node, dict):
        raise _filter_error(
            f"{where} must be a dict in Haystack's filter syntax: {{'field': 'meta.x', 'operator': '==', "
            f"'value': ...}} or {{'operator': 'AND', 'conditions': [...]}}; got {shown(node)}"
        )
    operator = node.get("operator")
    if "field" in node:
        if not isinstance(node["field"], str) or not node["field"]:
            raise _filter_error(
                f"{where}: 'field' must be a non-empty string like 'meta.x', got {shown(node['field'])}"
            )
        if "operator" not in node:
            raise _filter_error(
                f"{where}: comparison on {node['field']!r} has no 'operator'; one of {COMPARISON_OPERATORS}"
            )
        if not isinstance(operator, str) or operator not in COMPARISON_OPERATORS:
            raise _filter_error(
                f"{where}: comparison operator must be one of {COMPARISON_OPERATORS}, got {shown(operator)}"
            )
        if "value" not in node:
            raise _filter_error(f"{where}: comparison {node['field']!r} {operator} has no 'value'")
        if operator in ("in", "not in") and not isinstance(node["value"], list):
            raise _filter_error(f"{where}: operator {operator!r} needs a list value, got {shown(node['value'])}")
        return []
    if not isinstance(operator, str) or operator not in LOGICAL_OPERATORS:
        raise _filter_error(
            f"{where}: a node without 'field' is a logical node whose operator must be one of {LOGICAL_OPERATORS}, "
            f"got {shown(operator)}"
        )
    conditions = node.get("conditions")
    if not isinstance(conditions, list):
        raise _filter_error(
            f"{where}: logical operator {operator} needs a list of 'conditions', got {shown(conditions)}"
        )
    return conditions


def _filter_error(message: str) -> "FilterError":
    """Haystack's FilterError with MESSAGE, imported only here: importing these checks loads no Haystack (and so
    no torch), which keeps `needle --help` and the CLI's argument checks light."""
    from haystack.errors import FilterError

    return FilterError(message)


def shown(value: Any) -> str:
    """``repr`` of a value for a message, cut short (length and nesting) so that a huge or deep value cannot flood
    it; an integer too long to print is described by its size."""
    return _SHORT_REPR.repr(value)


def run_instruction(recorded: str, given: object) -> str:
    """The query instruction of one embedder run: the run's ``query_instruction`` replaces the init one (``recorded``)
    and never adds to it; ``""`` is none, None keeps the init one. Every query embedder follows this one rule.

    :raises ValueError: ``given`` is neither None nor a string.
    """
    instruction = recorded if given is None else given
    if not isinstance(instruction, str):
        raise ValueError(f"query_instruction must be a string, got {instruction!r}")
    return instruction
