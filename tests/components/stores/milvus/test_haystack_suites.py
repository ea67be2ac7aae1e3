"""MilvusDocumentStore against Haystack's DocumentStore test suites, on Milvus Lite and on `milvus-lite server`.

Every sync and async class of ``haystack.testing.document_store`` / ``document_store_async`` that fits the store
runs on both URIs (``milvus_support.milvus_uri``). Received documents are compared whole, sorted by id (Milvus
returns query results in its own order), with embeddings as the float32 values Milvus stores. Then what the
suites do not pin down: filters equal Haystack's matcher on random trees (searches too), documents without an
embedding never come back from dense search, and the store's documented refusals.
"""

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

import dateutil.parser
import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.errors import FilterError
from haystack.testing.document_store import (
    CountDocumentsByFilterTest,
    CountDocumentsTest,
    CountUniqueMetadataByFilterTest,
    DeleteAllTest,
    DeleteByFilterTest,
    DeleteDocumentsTest,
    FilterDocumentsTest,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldUniqueValuesTest,
    UpdateByFilterTest,
    WriteDocumentsTest,
)
from haystack.testing.document_store_async import (
    CountDocumentsAsyncTest,
    CountDocumentsByFilterAsyncTest,
    CountUniqueMetadataByFilterAsyncTest,
    DeleteAllAsyncTest,
    DeleteByFilterAsyncTest,
    DeleteDocumentsAsyncTest,
    FilterDocumentsAsyncTest,
    GetMetadataFieldMinMaxAsyncTest,
    GetMetadataFieldsInfoAsyncTest,
    GetMetadataFieldUniqueValuesAsyncTest,
    UpdateByFilterAsyncTest,
    WriteDocumentsAsyncTest,
)
from haystack.utils.filters import document_matches_filter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.stores.milvus import MilvusCollectionError, MilvusDocumentStore
from tests.support import milvus as milvus_support
from tests.support.milvus import ids

milvus_server = milvus_support.milvus_server
milvus_uri = milvus_support.milvus_uri
milvus_module_uri = milvus_support.milvus_module_uri
milvus_collection = milvus_support.milvus_collection
SUITE_DIM = 768  # the suites' embeddings


def as_stored(document: Document) -> Document:
    """A document as the store returns it: its embedding as float32 values (Milvus's FLOAT_VECTOR)."""
    if document.embedding is None:
        return document
    return replace(document, embedding=np.asarray(document.embedding, dtype=np.float32).tolist())


class MilvusSuite:
    """The store and the comparison every suite class here uses."""

    @pytest.fixture
    def document_store(self, milvus_uri: str, milvus_collection: str) -> Iterator[MilvusDocumentStore]:
        store = MilvusDocumentStore(uri=milvus_uri, collection_name=milvus_collection, embedding_dim=SUITE_DIM)
        yield store
        store.close()

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        assert sorted(received, key=lambda d: d.id) == sorted(map(as_stored, expected), key=lambda d: d.id)


class TestMilvusHaystackSuites(
    MilvusSuite,
    CountDocumentsTest,
    WriteDocumentsTest,
    DeleteDocumentsTest,
    FilterDocumentsTest,
    DeleteAllTest,
    DeleteByFilterTest,
    UpdateByFilterTest,
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldUniqueValuesTest,
):
    def test_write_documents(self, document_store: MilvusDocumentStore) -> None:
        """The default policy (NONE) refuses a stored id, like FAIL, and keeps what was stored."""
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            document_store.write_documents([doc])
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


class TestMilvusHaystackAsyncSuites(
    MilvusSuite,
    CountDocumentsAsyncTest,
    WriteDocumentsAsyncTest,
    DeleteDocumentsAsyncTest,
    FilterDocumentsAsyncTest,
    DeleteAllAsyncTest,
    DeleteByFilterAsyncTest,
    UpdateByFilterAsyncTest,
    CountDocumentsByFilterAsyncTest,
    CountUniqueMetadataByFilterAsyncTest,
    GetMetadataFieldsInfoAsyncTest,
    GetMetadataFieldMinMaxAsyncTest,
    GetMetadataFieldUniqueValuesAsyncTest,
):
    async def test_write_documents_async(self, document_store: MilvusDocumentStore) -> None:
        doc = Document(content="test doc", embedding=[0.25] * SUITE_DIM)
        assert await document_store.write_documents_async([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            await document_store.write_documents_async([doc])
        self.assert_documents_are_equal(await document_store.filter_documents_async(), [doc])


# --- filters: random trees against Haystack's own matcher, on filter_documents and on the searches --------------

N_DOCS, DIM = 24, 4
STORED: dict[str, list[Any]] = {  # each key's values hold one kind, so that '>' is mostly comparable
    "year": [1999, 2001, 2003, 2003.0, True],
    "topic": ["a", "b", 'q"t', "é", ""],
    "score": [-1.5, 0.0, 0.25, 1.75],
    "flag": [True, False, 1, 0],
    "when": ["2001-02-03", "2001-02-03T00:00:00", "2005-01-01T10:00:00+02:00"],
    "tags": [["a", "b"], [], [1, "a"], {"k": [1, 2]}],
    "mixed": [3, "2001", 5.5],  # numbers and a string: for the one documented difference
}
VALUES: dict[str, Any] = {
    "year": st.sampled_from([1999, 2001, 2003.0, True, None, "2001"]),
    "topic": st.sampled_from(["a", "b", 'q"t', "é", "", None, 3]),
    "score": st.floats(-2, 2, allow_nan=False, width=32) | st.none(),
    "flag": st.sampled_from([True, False, 1, 0, None]),
    "when": st.sampled_from(["2001-02-03", "2001-02-03T00:00:00", "2005-01-01T10:00:00+02:00", "x", None]),
    "tags": st.sampled_from([["a", "b"], [], [1, "a"], {"k": [1, 2]}, None]),
}
FIELDS = [f"meta.{key}" for key in VALUES] + ["meta.tags.k", "meta.absent", "year", "id", "content", "embedding"]


def filter_corpus() -> list[Document]:
    """Documents whose meta keys go missing in patterns and hold several types, a third of them without embedding."""
    rng = np.random.default_rng(11)
    documents = []
    for i in range(N_DOCS):
        meta = {key: vals[i % len(vals)] for n, (key, vals) in enumerate(STORED.items()) if (i + n) % (n + 2)}
        embedding = None if i % 3 == 0 else rng.standard_normal(DIM).astype(np.float32).tolist()
        documents.append(Document(id=f"d{i:02d}", content=f"common word{i}", meta=meta, embedding=embedding))
    return documents


FILTER_DOCS = filter_corpus()


@st.composite
def comparisons(draw: st.DrawFn) -> dict[str, Any]:
    field = draw(st.sampled_from(FIELDS))
    key = field.removeprefix("meta.").split(".")[0]
    value_of = VALUES.get(key, st.sampled_from(["d03", "common word4", "2001-02-03", None, 7]))
    operator = draw(st.sampled_from(["==", "!=", "in", "not in", ">", ">=", "<", "<="]))
    if operator in ("in", "not in"):
        return {"field": field, "operator": operator, "value": draw(st.lists(value_of, max_size=3))}
    return {"field": field, "operator": operator, "value": draw(value_of)}


TREES = st.recursive(
    comparisons(),
    lambda inner: st.fixed_dictionaries(
        {"operator": st.sampled_from(["AND", "OR", "NOT"]), "conditions": st.lists(inner, max_size=3)}
    ),
    max_leaves=5,
)


def expected_ids(filters: dict[str, Any], documents: list[Document]) -> list[str] | type[Exception]:
    """What Haystack's matcher selects, or the error it raises for these filters (FilterError, TypeError)."""
    try:
        return sorted(d.id for d in documents if document_matches_filter(filters, d))
    except (FilterError, TypeError) as error:
        return type(error)


def is_date(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        try:
            dateutil.parser.parse(text)
        except (ValueError, OverflowError):
            return False
    return True


def refused_by_rule(node: dict[str, Any]) -> bool:
    """The store's documented refusal: '>' and co. with a list, a dict, a non-date string, or a number on id/content."""
    if "field" not in node:
        return any(refused_by_rule(child) for child in node["conditions"])
    value = node["value"]
    if node["operator"] not in (">", ">=", "<", "<=") or value is None:
        return False
    if isinstance(value, list | dict) or (isinstance(value, str) and not is_date(value)):
        return True
    return node["field"] in ("id", "content") and isinstance(value, int | float)


@pytest.fixture(scope="module")
def filter_store(milvus_module_uri: str) -> Iterator[MilvusDocumentStore]:
    store = MilvusDocumentStore(uri=milvus_module_uri, collection_name="filters")
    store.write_documents(FILTER_DOCS)
    yield store
    store.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filters=TREES)
def test_filters_select_what_haystacks_matcher_selects(filter_store: MilvusDocumentStore, filters: Any) -> None:
    """
    Where Haystack's matcher answers, filter_documents, count, dense, BM25 and hybrid search keep exactly its
    documents; a filter the store refuses by rule is a FilterError; where the matcher raises on a stored value, the
    store answers or raises FilterError, never another error.
    """
    stored = filter_store.filter_documents()  # the documents as stored (float32 embeddings)
    expected = expected_ids(filters, stored)
    if refused_by_rule(filters):
        for call in (filter_store.filter_documents, filter_store.count_documents_by_filter):
            with pytest.raises(FilterError):
                call(filters)
        return
    if not isinstance(expected, list):
        with contextlib.suppress(FilterError):
            filter_store.filter_documents(filters)
        return
    assert sorted(ids(filter_store.filter_documents(filters))) == expected
    assert filter_store.count_documents_by_filter(filters) == len(expected)
    embedded = sorted(d.id for d in stored if d.id in expected and d.embedding is not None)
    assert sorted(ids(filter_store.embedding_search([[0.5] * DIM], N_DOCS, filters)[0])) == embedded
    assert sorted(ids(filter_store.bm25_search(["common"], N_DOCS, filters)[0])) == expected
    fused = filter_store.hybrid_search(["common"], [[0.5] * DIM], N_DOCS, filters)[0]
    assert sorted(ids(fused)) == expected


def test_documents_round_trip_whole(filter_store: MilvusDocumentStore) -> None:
    """Content, meta of every JSON type (lists, empty lists, nested dicts) and float32 embeddings come back."""
    got = {d.id: d for d in filter_store.filter_documents()}
    assert [got[d.id] for d in FILTER_DOCS] == [as_stored(d) for d in FILTER_DOCS]
    some = [FILTER_DOCS[3].id, FILTER_DOCS[4].id, "missing"]
    assert sorted(filter_store.get_documents_by_id(some), key=lambda d: d.id) == [got[i] for i in some[:2]]


def test_dense_search_never_returns_a_document_without_embedding(filter_store: MilvusDocumentStore) -> None:
    without = {d.id for d in FILTER_DOCS if d.embedding is None}
    dense = ids(filter_store.embedding_search([[1.0, 0.0, 0.0, 0.0]], 10_000)[0])
    assert len(dense) == N_DOCS - len(without)
    assert not without & set(dense)
    assert without <= set(ids(filter_store.bm25_search(["common"], N_DOCS)[0]))  # BM25 finds them by text
    with_none = {"field": "embedding", "operator": "==", "value": None}
    assert sorted(ids(filter_store.filter_documents(with_none))) == sorted(without)
    assert filter_store.embedding_search([[1.0, 0.0, 0.0, 0.0]], 10, with_none) == [[]]


BAD_FILTERS = [
    ({"field": "meta.year", "operator": ">", "value": "soon"}, "'>' on 'meta.year' compares numbers or dates"),
    ({"field": "meta.year", "operator": "<=", "value": [2001]}, "'<=' on 'meta.year' needs a number or a date"),
    ({"field": "meta.year", "operator": ">=", "value": {"a": 1}}, "'>=' on 'meta.year' needs a number or a date"),
    ({"field": "id", "operator": "<", "value": 5}, "'<' on 'id': 'id' holds text"),
    ({"field": "meta.year", "operator": "~", "value": 1}, "comparison operator must be one of"),
    ({"field": "meta.year", "operator": "in", "value": 2001}, "operator 'in' needs a list value"),
    ({"operator": "XOR", "conditions": []}, "operator must be one of"),
    ({"conditions": []}, "logical node whose operator must be one of"),
]


@pytest.mark.parametrize(("filters", "message"), BAD_FILTERS)
def test_bad_filters_are_filter_errors_naming_field_and_operator(
    filter_store: MilvusDocumentStore, filters: dict[str, Any], message: str
) -> None:
    calls = [
        lambda: filter_store.filter_documents(filters),
        lambda: filter_store.count_documents_by_filter(filters),
        lambda: filter_store.embedding_search([[0.5] * DIM], 3, filters),
        lambda: filter_store.bm25_search(["common"], 3, filters),
    ]
    for call in calls:
        with pytest.raises(FilterError, match=message.replace("(", r"\(")):
            call()


def test_mixed_type_in_and_nested_values_need_no_special_care(filter_store: MilvusDocumentStore) -> None:
    """Raw Milvus refuses ``in [2001, "2001"]`` and cannot compare lists; here both select what Haystack does."""
    for filters in [
        {"field": "meta.year", "operator": "in", "value": [2001, "2001"]},
        {"field": "meta.tags", "operator": "==", "value": ["a", "b"]},
        {"field": "meta.tags.k", "operator": "not in", "value": [[1, 2]]},
    ]:
        assert sorted(ids(filter_store.filter_documents(filters))) == expected_ids(filters, FILTER_DOCS)


def test_ordering_with_a_number_skips_stored_strings(filter_store: MilvusDocumentStore) -> None:
    """The one documented difference: Haystack's matcher raises FilterError on a stored "2001"; Milvus skips it."""
    filters = {"field": "meta.mixed", "operator": ">", "value": 1}
    assert expected_ids(filters, FILTER_DOCS) is FilterError
    numbers = sorted(d.id for d in FILTER_DOCS if isinstance(d.meta.get("mixed"), int | float))
    assert numbers
    assert sorted(ids(filter_store.filter_documents(filters))) == numbers


# --- refusals ------------------------------------------------------------------------------------------------


def test_a_first_write_without_embeddings_needs_embedding_dim(milvus_uri: str, milvus_collection: str) -> None:
    store = MilvusDocumentStore(uri=milvus_uri, collection_name=milvus_collection)
    with pytest.raises(ValueError, match=f"'{milvus_collection}' .* does not exist yet .* set embedding_dim"):
        store.write_documents([Document(content="text only")])
    assert not store.client.has_collection(milvus_collection)
    store.write_documents([Document(content="embedded", embedding=[0.5] * DIM)])  # its size decides
    assert store.write_documents([Document(content="text only")]) == 1
    with pytest.raises(ValueError, match="has an embedding of 3 values, expected 4"):
        store.write_documents([Document(content="x", embedding=[0.5] * 4), Document(content="y", embedding=[1.0] * 3)])
    store.close()


def create_previous_schema(store: MilvusDocumentStore, dim: int) -> None:
    """The collection the previous release created: id, analysed text, vector, BM25 sparse; no embedding flag."""
    from pymilvus import DataType, Function, FunctionType

    client, s = store.client, store.settings
    schema = client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field(s.id_field_name, DataType.VARCHAR, is_primary=True, max_length=s.id_max_length)
    analyzer = {"enable_analyzer": True, "analyzer_params": s.analyzer_params()}
    schema.add_field(s.text_field_name, DataType.VARCHAR, max_length=s.text_max_length, **analyzer)
    schema.add_field(s.vector_field_name, DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field(s.sparse_field_name, DataType.SPARSE_FLOAT_VECTOR)
    bm25 = Function(
        name=f"{s.sparse_field_name}_bm25",
        input_field_names=[s.text_field_name],
        output_field_names=[s.sparse_field_name],
        function_type=FunctionType.BM25,
    )
    schema.add_function(bm25)
    index = client.prepare_index_params()
    index.add_index(s.vector_field_name, **s.dense_index())
    index.add_index(s.sparse_field_name, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection(s.collection_name, schema=schema, index_params=index)


def test_a_collection_of_the_previous_schema_keeps_working(milvus_uri: str, milvus_collection: str) -> None:
    """Searched exactly as before, embeddings read back; documents without one refused in one line until recreated."""
    first = MilvusDocumentStore(uri=milvus_uri, collection_name=milvus_collection)
    create_previous_schema(first, milvus_support.DIM)
    first.close()
    store = MilvusDocumentStore(uri=milvus_uri, collection_name=milvus_collection)
    docs = milvus_support.corpus(12)
    store.write_documents(docs)
    query = docs[3].embedding
    before = store.client.search(  # the previous release's dense search call
        milvus_collection, data=[query], anns_field="vector", search_params=store.settings.dense_search(), limit=5
    )[0]
    hits = store.embedding_search([query], 5)[0]
    assert [(h.id, h.score) for h in hits] == [(h["id"], pytest.approx(h["distance"])) for h in before]
    assert sorted(store.filter_documents(), key=lambda d: d.id) == [as_stored(d) for d in docs]
    with pytest.raises(MilvusCollectionError) as error:
        store.write_documents([docs[0], Document(id="plain", content="text only")])
    message = str(error.value)
    assert "\n" not in message
    assert f"Milvus collection '{milvus_collection}' at {milvus_uri} was created before documents without" in message
    assert "documents[1] (id 'plain') has none: embed it, or write into a new collection_name" in message
    assert store.count_documents() == 12
    store.delete_all_documents(recreate_index=True)  # the current schema, same vector size
    assert store.write_documents([Document(id="plain", content="text only"), docs[0]]) == 2
    assert ids(store.embedding_search([query], 5)[0]) == [docs[0].id]
    store.close()
