"""The input checks every store, retriever, embedder and ranker shares, so one bad input fails the same way everywhere.

One rule per input, raising Haystack's exception types with a message that names the input and its allowed range:

- ``top_k``: an integer in [1, 10000] (mxRAG's ``k`` range), else ``ValueError``.
- a query: a string of 1 to 1,048,576 characters (mxRAG's 1 MiB) holding something other than whitespace, and
  valid Unicode (no lone surrogates, which is what ``\\xff`` in a command line or a broken JSON escape becomes),
  else ``ValueError``. An empty query is an error in every mode: dense would return arbitrary neighbours of the
  empty string's vector and BM25 nothing, so neither answer means anything.
- a batch of queries: a list whose every item passes the query rule, named ``queries[i]``; an empty list is
  allowed (it has no answers).
- filters: ``None``/``{}`` or a dict in Haystack's filter syntax, else ``haystack.errors.FilterError``.
- document text: valid Unicode, so a write never fails half-way on encoding.
"""

from typing import Any

from haystack.errors import FilterError

MAX_TOP_K = 10_000
MAX_QUERY_CHARS = 1_048_576


def check_top_k(top_k: Any, name: str = "top_k") -> int:
    """Return ``top_k`` if it is an integer in [1, MAX_TOP_K]; else raise ValueError stating the range."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"{name} must be an integer in [1, {MAX_TOP_K}], got {top_k!r}")
    return top_k


def check_query(query: Any, name: str = "query") -> str:
    """Return ``query`` if it is a non-blank, valid-Unicode string of at most MAX_QUERY_CHARS characters."""
    if not isinstance(query, str):
        raise ValueError(f"{name} must be a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"{name} is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS:,} (1 MiB)")
    if not query.strip():
        raise ValueError(f"{name} is empty; give at least one non-space character")
    check_unicode(query, name)
    return query


def check_queries(queries: Any, name: str = "queries") -> list[str]:
    """Return ``queries`` if it is a list of strings that each pass ``check_query`` (named ``queries[i]``)."""
    if not isinstance(queries, list):
        raise ValueError(f"{name} must be a list of strings, got {type(queries).__name__}")
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


def check_filters(filters: Any) -> None:
    """Refuse filters that are not ``None``, ``{}`` or a dict in Haystack's syntax, before anything is scanned."""
    if filters is None or (isinstance(filters, dict) and not filters):
        return
    if not isinstance(filters, dict) or ("operator" not in filters and "conditions" not in filters):
        raise FilterError(
            "filters must be a dict in Haystack's syntax: {'field': 'meta.x', 'operator': '==', 'value': ...} "
            f"or {{'operator': 'AND', 'conditions': [...]}}; got {filters!r}"[:500]
        )
