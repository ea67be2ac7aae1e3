"""``candidate_clause`` only ever narrows: on random stored documents and random filters (well-formed or not),
Haystack's ``document_matches_filter`` run on the documents SQLite lets through gives exactly the rows (or raises
exactly the error) it gives run on every document. And it does narrow where it can: a selective filter lets
through only its matches."""

import json
import sqlite3
from typing import Any

import pytest
from haystack import Document
from haystack.utils.filters import document_matches_filter
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from components.stores.document_checks import encode_document
from components.stores.filter_sql import candidate_clause
from components.stores.hits import document_from_dict

KEYS = ["a", "b", "x'y", "c[0]", "2024", "t\tab"]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, 1, -1, 2**53, 2**53 + 1, 2**63 - 1, 0.5, 1.0, -0.0, 1e300, float("nan"), float("inf")])
    | st.floats(allow_nan=True)
    | st.sampled_from(["", "acme", "acme\x00evil", "ACME", "2024-01-01", "2024-01-01T00:00:00", "1", "é", 'q"uote'])
    | st.text(max_size=4)
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(KEYS), inner)
)
ODD_FIELDS = [
    "meta.t\tab",
    "meta.a\x00b",
    "meta.b.a",
    "meta.x'y",
    "meta.c[0]",
    "meta.2024",
    "a",
    "id",
    "content",
    "score",
    "meta",
    "content.a",
]
FIELDS = st.sampled_from(["meta.a", "meta.a", "meta.a", "meta.b", "meta.b", *ODD_FIELDS, "meta..a", 'meta."a', 7])
OPERATORS = st.sampled_from(["==", "!=", ">", ">=", "<", "<=", "in", "not in", "like"])
COMPARISONS = st.builds(
    lambda f, o, v: {"field": f, "operator": o, "value": v}, FIELDS, OPERATORS, VALUES | st.lists(VALUES)
)
MALFORMED = st.sampled_from(
    [{"field": "meta.a", "operator": "=="}, {"operator": "AND"}, {"operator": "XOR", "conditions": []}]
)


def logic(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda o, c: {"operator": o, "conditions": c},
        st.sampled_from(["AND", "OR", "NOT"]),
        st.lists(inner, max_size=3),
    )


FILTERS = st.recursive(COMPARISONS | MALFORMED, logic, max_leaves=6)
DOCUMENTS = st.lists(
    st.builds(
        lambda content, meta: (content, meta), st.none() | st.sampled_from(["acme", "2024-01-01", "text"]),
        st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3),
    ),
    min_size=1, max_size=8,
)  # fmt: skip


def table(documents: list[tuple[str | None, dict[str, Any]]]) -> sqlite3.Connection:
    """The documents as a FAISS store's table holds them: JSON text a store writes (``encode_document``)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE documents (row INTEGER PRIMARY KEY, document TEXT NOT NULL)")
    encoded = [encode_document(Document(id=f"d{row}", content=c, meta=m), row) for row, (c, m) in enumerate(documents)]
    db.executemany("INSERT INTO documents VALUES (?, ?)", enumerate(encoded))
    return db


def outcome(filters: dict[str, Any], rows: list[tuple[int, str]]) -> Any:
    """The rows of ROWS that FILTERS match, or the error it raises, as Haystack decides."""
    try:
        return [row for row, text in rows if document_matches_filter(filters, document_from_dict(json.loads(text)))]
    except Exception as error:  # the same error either way is what is compared
        return (type(error), str(error))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS, FILTERS)
@example([("x", {"a": "2024-01-01T00:00:00"})], {"field": "meta.a", "operator": "==", "value": "2024-01-01"})
@example([("x", {"a": 1}), ("y", {"a": "acme"})], {"field": "meta.a", "operator": "<", "value": 5})
@example([("x", {"a": "acme\x00evil"})], {"field": "meta.a", "operator": "in", "value": ["acme\x00evil"]})
@example([("x", {"a": float("nan"), "b": 1})], {"field": "meta.b", "operator": "==", "value": 1})
@example([("x", {"t\tab": 1})], {"field": "meta.t\tab", "operator": "==", "value": 1})  # JSON escapes the key
def test_haystack_decides_the_same_on_what_sqlite_lets_through(documents: list[Any], filters: dict[str, Any]) -> None:
    db = table(documents)
    every = db.execute("SELECT row, document FROM documents ORDER BY row").fetchall()
    clause = candidate_clause(filters)
    if clause is None:
        return
    text, parameters = clause
    through = db.execute(f"SELECT row, document FROM documents WHERE {text} ORDER BY row", parameters).fetchall()
    assert outcome(filters, through) == outcome(filters, every)


def test_a_selective_filter_lets_through_only_its_matches() -> None:
    documents = [(f"text {n}", {"tenant": f"t{n % 10}", "year": 2000 + n % 30, "tags": ["x"]}) for n in range(300)]
    db = table(documents)
    filters = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.tenant", "operator": "in", "value": ["t3", "t4"]},
            {"field": "meta.year", "operator": ">=", "value": 2020},
            {"operator": "NOT", "conditions": [{"field": "meta.tags", "operator": "==", "value": ["y"]}]},
        ],
    }
    text, parameters = candidate_clause(filters) or ("1", [])
    through = db.execute(f"SELECT row, document FROM documents WHERE {text} ORDER BY row", parameters).fetchall()
    every = db.execute("SELECT row, document FROM documents ORDER BY row").fetchall()
    assert [row for row, _ in through] == outcome(filters, every)
    assert len(through) == 20


def nested(levels: int) -> dict[str, Any]:
    """OR(AND(OR(... meta.a == 1 ...))) LEVELS deep, two conditions a level."""
    node: dict[str, Any] = {"field": "meta.a", "operator": "==", "value": 1}
    for level in range(levels):
        sibling = {"field": "meta.b", "operator": "==", "value": level}
        node = {"operator": "OR" if level % 2 else "AND", "conditions": [node, sibling]}
    return node


def right_nested(levels: int, operators: tuple[str, ...]) -> dict[str, Any]:
    """A OP1 (B OP2 (C OP1 (...))), LEVELS deep, as a recursive builder writes it."""
    node: dict[str, Any] = {"field": "meta.a", "operator": "in", "value": [0, None]}
    for level in range(levels):
        leaf = {"field": "meta.a", "operator": "in", "value": [level + 1, 7]}
        node = {"operator": operators[level % len(operators)], "conditions": [leaf, node]}
    return node


LARGE = {
    "OR right-nested 40 deep": right_nested(40, ("OR",)),
    "AND and OR alternating 30 deep": right_nested(30, ("AND", "OR")),
    "a lone surrogate value": {"field": "meta.a", "operator": "==", "value": "\ud800"},
    "a lone surrogate key": {"field": "meta.\ud800", "operator": "in", "value": [1]},
    "in 40,000 values": {"field": "meta.a", "operator": "in", "value": [*range(40_000), None, "x"]},
    "OR of 2,000": {
        "operator": "OR",
        "conditions": [{"field": "meta.a", "operator": "==", "value": n} for n in range(2_000)],
    },
    "AND of 2,000": {"operator": "AND", "conditions": [{"field": "meta.a", "operator": "in", "value": [1, 2]}] * 2_000},
    "90 levels deep": nested(90),
}


@pytest.mark.parametrize("filters", LARGE.values(), ids=LARGE.keys())
def test_filters_beyond_what_sqlite_takes_are_answered_as_haystack_answers(filters: dict[str, Any]) -> None:
    """SQLite takes at most 32,766 parameters, expression trees 1,000 deep, parentheses about 90 deep and UTF-8 text
    only: such filters read every document, or are narrowed in a shape SQLite takes (an OR of ORs as one chain)."""
    db = table([("x", {"a": 1, "b": 0}), ("y", {"a": None}), ("z", {"a": "x"}), ("w", {"a": 7})])
    every = db.execute("SELECT row, document FROM documents ORDER BY row").fetchall()
    text, parameters = candidate_clause(filters) or ("1", [])
    through = db.execute(f"SELECT row, document FROM documents WHERE {text} ORDER BY row", parameters).fetchall()
    assert outcome(filters, through) == outcome(filters, every)
