"""The metadata queries (components/stores/metadata_queries.py) on the BM25 and FAISS stores, in memory and saved.

Property: for random documents whose meta fields mix ints, floats, bools, strings, None, lists and dicts (values
chosen to collide: ``1``, ``1.0``, ``True`` and ``"1"``; ``"a"`` and ``"A"``), each query equals a plain Python
computation over the written documents, filtered by Haystack's own ``document_matches_filter``. Then the
parameter checks: a wrong kind of argument is a ValueError naming it, a bad filter the store's FilterError.
"""

import tempfile
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from haystack.errors import FilterError
from haystack.utils.filters import document_matches_filter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.stores import KINDS, make_store

FIELDS = ("f", "g", "h")
SCALARS = [0, 1, 2, 10, -3, 1.0, 1.5, -2.25, True, False, "1", "10", "a", "A", "ab", "Bab", None]
VALUES = st.sampled_from([*SCALARS, [1], [True], ["a", 1], {"k": 1}, {"k": True}])
METAS = st.lists(
    st.fixed_dictionaries({}, optional={"f": VALUES, "g": VALUES, "h": VALUES, "tag": st.sampled_from(["x", "y"])}),
    max_size=12,
)
TAG_X = {"field": "meta.tag", "operator": "==", "value": "x"}
NOT_TAG_X = {"field": "meta.tag", "operator": "!=", "value": "x"}
F_1_OR_TAG_Y = {
    "operator": "OR",
    "conditions": [
        {"field": "meta.f", "operator": "==", "value": 1},
        {"field": "meta.tag", "operator": "in", "value": ["y"]},
    ],
}
FILTERS = st.sampled_from([None, {}, TAG_X, NOT_TAG_X, F_1_OR_TAG_Y])
SEARCH_TERMS = st.sampled_from([None, "", "a", "A", "1", "b", "k", "zzz"])
SAVED = (False, True)


def _same(a: Any, b: Any) -> bool:
    """Whether two meta values are the same value: same type and equal, at every nesting level."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _distinct(metas: list[dict[str, Any]], key: str) -> list[Any]:
    """The non-None values of ``key``, first occurrence of each, in document order."""
    seen: list[Any] = []
    for meta in metas:
        value = meta.get(key)
        if value is not None and not any(_same(value, other) for other in seen):
            seen.append(value)
    return seen


def _matching(metas: list[dict[str, Any]], filters: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The metas of the documents Haystack's reference filter semantics accept."""
    if not filters:
        return metas
    return [m for m in metas if document_matches_filter(filters=filters, document=Document(content="x", meta=m))]


def _min_max(metas: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Min and max over number and string values, None for both when there are none or both kinds."""
    values = [m[key] for m in metas if isinstance(m.get(key), int | float | str)]
    kinds = {isinstance(value, str) for value in values}
    if len(kinds) != 1:
        return {"min": None, "max": None}
    return {"min": sorted(values)[0], "max": sorted(values)[-1]}


def _types(metas: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Each field with a non-None value, typed by the last such value."""
    names = {bool: "boolean", int: "int", float: "float"}
    types: dict[str, dict[str, str]] = {}
    for meta in metas:
        for key, value in meta.items():
            if value is not None:
                types[key] = {"type": names.get(type(value), "keyword")}
    return types


@pytest.mark.parametrize("saved", SAVED, ids=["memory", "saved"])
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(metas=METAS, filters=FILTERS, search_term=SEARCH_TERMS, from_=st.integers(0, 6), size=st.integers(0, 6))
def test_queries_equal_a_plain_computation(
    kind: str, saved: bool, metas: list[dict[str, Any]], filters: Any, search_term: str | None, from_: int, size: int
) -> None:
    """Counts, fields, ranges and pages of distinct values are what Python computes over the same documents."""
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(kind, Path(tmp) / "store" if saved else None)
        store.write_documents([Document(id=f"d{i}", content=f"doc {i}", meta=m) for i, m in enumerate(metas)])
        matching = _matching(metas, filters)
        expected_counts = {key: len(_distinct(matching, key)) for key in FIELDS}
        assert store.count_unique_metadata_by_filter(filters, ["f", "meta.g", "h"]) == expected_counts
        assert store.get_metadata_fields_info() == _types(metas)
        for key in FIELDS:
            assert store.get_metadata_field_min_max(f"meta.{key}") == _min_max(metas, key)
        values = _distinct(matching, "f")
        if search_term:
            values = [value for value in values if search_term.lower() in str(value).lower()]
        values.sort(key=lambda value: (str(value), type(value).__name__))
        page, total = store.get_metadata_field_unique_values("f", search_term, from_, size, filters)
        assert total == len(values)
        assert len(page) == len(values[from_ : from_ + size])
        assert all(_same(got, want) for got, want in zip(page, values[from_ : from_ + size], strict=True))


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest) -> Any:
    """An in-memory store of each kind holding three documents."""
    store = make_store(request.param, None)
    metas: list[dict[str, Any]] = [{"meta.x": 1, "x": 5, "tag": "a"}, {"meta.x": 2, "x": 7}, {"x": "seven"}]
    store.write_documents([Document(id=str(i), content=f"doc {i}", meta=m) for i, m in enumerate(metas)])
    return store


def test_one_meta_prefix_is_removed(store: Any) -> None:
    """'meta.meta.x' names the field called 'meta.x'; 'x' and 'meta.x' name the field called 'x'."""
    assert store.count_unique_metadata_by_filter({}, ["meta.meta.x", "x"]) == {"meta.x": 2, "x": 3}
    assert store.get_metadata_field_min_max("meta.meta.x") == {"min": 1, "max": 2}
    assert store.get_metadata_field_unique_values("meta.x")[1] == 3


@pytest.mark.parametrize("kind", KINDS)
def test_pages_order_values_by_text_then_type(kind: str) -> None:
    """Values sharing a text ("1" and 1) come by type name, whatever the write order, so pages never overlap."""
    store = make_store(kind, None)
    values: list[Any] = ["1", True, 1, "True", 0.5]
    store.write_documents([Document(id=str(i), content="doc", meta={"v": v}) for i, v in enumerate(values)])
    pages = [store.get_metadata_field_unique_values("v", from_=start, size=2)[0] for start in (0, 2, 4)]
    assert [[(type(v).__name__, v) for v in page] for page in pages] == [
        [("float", 0.5), ("int", 1)],
        [("str", "1"), ("bool", True)],
        [("str", "True")],
    ]


def test_a_field_mixing_numbers_and_strings_has_no_range(store: Any) -> None:
    """5, 7 and 'seven' have no order: min and max are None rather than an error."""
    assert store.get_metadata_field_min_max("x") == {"min": None, "max": None}


def test_an_unknown_field_is_empty(store: Any) -> None:
    """A field no document has: zero distinct values, no range, an empty page."""
    assert store.count_unique_metadata_by_filter({}, ["nope"]) == {"nope": 0}
    assert store.get_metadata_field_min_max("nope") == {"min": None, "max": None}
    assert store.get_metadata_field_unique_values("content") == ([], 0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda s: s.count_unique_metadata_by_filter({}, "x"),
            "metadata_fields must be a list of .* got str",
        ),
        (lambda s: s.count_unique_metadata_by_filter({}, ["x", 3]), r"metadata_fields\[1\] must be a field name"),
        (lambda s: s.get_metadata_field_min_max(None), "metadata_field must be a field name .* got NoneType"),
        (lambda s: s.get_metadata_field_unique_values("x", from_=-1), "from_ must be an integer >= 0, got -1"),
        (lambda s: s.get_metadata_field_unique_values("x", size=True), "size must be an integer >= 0, got True"),
        (lambda s: s.get_metadata_field_unique_values("x", search_term=5), "search_term must be a string or None"),
    ],
)
def test_a_wrong_kind_of_argument_is_named(store: Any, call: Any, message: str) -> None:
    """Each wrong argument is a ValueError naming the parameter and what it takes."""
    with pytest.raises(ValueError, match=message):
        call(store)


def test_a_bad_filter_is_the_stores_filter_error(store: Any) -> None:
    """The filters go through the store's own filter_documents, so a malformed one fails as it does there."""
    bad = {"field": "meta.x", "operator": "~", "value": 1}
    with pytest.raises(FilterError, match="comparison operator must be one of"):
        store.count_unique_metadata_by_filter(bad, ["x"])
    with pytest.raises(FilterError, match="comparison operator must be one of"):
        store.get_metadata_field_unique_values("x", filters=bad)


async def test_the_async_twins_answer_as_the_sync_calls(store: Any) -> None:
    """Each *_async twin returns what its synchronous method returns."""
    assert await store.count_unique_metadata_by_filter_async({}, ["x"]) == store.count_unique_metadata_by_filter(
        {}, ["x"]
    )
    assert await store.get_metadata_fields_info_async() == store.get_metadata_fields_info()
    assert await store.get_metadata_field_min_max_async("meta.x") == store.get_metadata_field_min_max("meta.x")
    assert await store.get_metadata_field_unique_values_async("x", "s", 0, 1) == (["seven"], 1)
