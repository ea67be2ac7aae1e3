"""Tenants in one Milvus collection: ``partition_key_field`` on Milvus Lite (which runs partition keys).

One collection holds two tenants of unequal size, written once for the module. A filter on ``meta.tenant`` keeps
every search (dense, BM25) and read inside that tenant, also when ``top_k`` is larger than its share; the filter
reaches Milvus as an exact expression on the partition key field; documents read back with their tenant in the
meta. A document without a string tenant (or with one no Milvus filter can name: control characters, a lone
surrogate) is refused by name before anything is written; filters with such strings on other fields still select
what Haystack's matcher selects; an inexact filter keeps its tenant condition for Milvus; a collection whose
partition key is not the one the settings name is refused naming ``partition_key_field``; bad settings fail at
init; the settings survive ``to_dict``/``from_dict`` and YAML.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Document

from components.stores.milvus import MilvusCollectionError, MilvusDocumentStore
from tests.support.milvus import DIM, corpus, ids

TENANT_A = {"field": "meta.tenant", "operator": "==", "value": "a"}
QUERY = [1.0 / DIM**0.5] * DIM


def tenant_corpus() -> list[Document]:
    """The shared corpus, the first 6 documents of tenant a, the other 14 of tenant b."""
    documents = corpus(20)
    for position, document in enumerate(documents):
        document.meta["tenant"] = "a" if position < 6 else "b"
    return documents


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("tenants") / "m.db")


@pytest.fixture(scope="module")
def store(db: str) -> Iterator[MilvusDocumentStore]:
    """Both tenants in one collection with 4 partitions."""
    store = MilvusDocumentStore(uri=db, collection_name="tenants", partition_key_field="tenant", num_partitions=4)
    assert store.write_documents(tenant_corpus()) == 20
    yield store
    store.close()


def of_tenant(name: str) -> set[str]:
    return {document.id for document in tenant_corpus() if document.meta["tenant"] == name}


def test_a_tenant_sees_only_its_documents_even_when_top_k_exceeds_its_share(store: MilvusDocumentStore) -> None:
    assert len(of_tenant("a")) == 6
    dense = store.embedding_search([QUERY], top_k=15, filters=TENANT_A)[0]
    bm25 = store.bm25_search(["alpha beta gamma delta"], top_k=15, filters=TENANT_A)[0]
    assert set(ids(dense)) == of_tenant("a")  # all six, and nothing of b filling the other nine places
    assert set(ids(bm25)) <= of_tenant("a")
    assert bm25
    assert {d.id for d in store.filter_documents(TENANT_A)} == of_tenant("a")
    assert store.count_documents_by_filter(TENANT_A) == 6
    not_a = {"operator": "NOT", "conditions": [TENANT_A]}
    assert set(ids(store.embedding_search([QUERY], top_k=20, filters=not_a)[0])) == of_tenant("b")
    both = {"field": "meta.tenant", "operator": "in", "value": ["a", "b"]}
    assert store.count_documents_by_filter(both) == 20
    assert store.count_documents_by_filter({"field": "meta.tenant", "operator": "==", "value": "c"}) == 0


def test_the_tenant_filter_is_an_exact_milvus_expression_on_the_partition_key(store: MilvusDocumentStore) -> None:
    """Milvus searches only the partitions of the tenants an expression on the key names (``tenant in [...]``)."""
    where = store._filter(
        {"operator": "AND", "conditions": [TENANT_A, {"field": "meta.n", "operator": ">", "value": 2}]}
    )
    assert where.exact
    assert where.expression is not None
    assert '(tenant in ["a"])' in where.expression
    assert "$meta" not in where.expression.split(" and ")[0]


def test_documents_read_back_with_their_tenant_and_the_collection_is_keyed(store: MilvusDocumentStore) -> None:
    written = {document.id: document for document in tenant_corpus()}
    for document in store.filter_documents():
        assert document.meta == written[document.id].meta
    fields = {f["name"]: f for f in store.client.describe_collection("tenants")["fields"]}
    assert fields["tenant"].get("is_partition_key") is True
    partitions = [p for p in store.client.list_partitions("tenants") if p.startswith("_pk_")]
    assert len(partitions) == 16  # Milvus Lite's own count: it ignores num_partitions (a server makes 4)


def test_num_partitions_on_milvus_lite_is_a_warning_that_it_is_ignored(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = MilvusDocumentStore(uri=db, collection_name="warned", partition_key_field="tenant", num_partitions=4)
    try:
        store.write_documents(tenant_corpus()[:1])
    finally:
        store.close()
    assert "Milvus Lite ignores num_partitions=4" in caplog.text


@pytest.mark.parametrize(
    ("tenant", "shown"),
    [
        (None, "got None"),
        (7, "got 7"),
        ("x" * 513, "at most 512 bytes"),
        ("a\x01", "without control characters U+0000-U+0008, U+000B, U+000C, U+000E-U+001F"),
        ("a\x0c", "tab, newline and carriage return are allowed"),
        ("a\ud800", "or lone surrogates"),
    ],
    ids=["none", "int", "long", "control", "form-feed", "surrogate"],
)
def test_a_document_without_a_string_tenant_is_refused_by_name_and_nothing_is_written(
    store: MilvusDocumentStore, tenant: object, shown: str
) -> None:
    good = Document(id="new-good", content="alpha", embedding=QUERY, meta={"tenant": "a"})
    bad = Document(id="new-bad", content="beta", embedding=QUERY, meta={} if tenant is None else {"tenant": tenant})
    with pytest.raises(ValueError, match=r"documents\[1\] \(id 'new-bad'\): meta\['tenant'\] is its tenant") as error:
        store.write_documents([good, bad])
    assert "partition_key_field" in str(error.value)
    assert shown in str(error.value)
    assert store.count_documents() == 20


def test_filters_holding_strings_milvus_cannot_parse_still_select_what_haystack_selects(db: str) -> None:
    """Milvus's parser refuses the JSON escapes of control characters: such comparisons on id, content and meta are
    left to Haystack's matcher. A tenant with one matches nothing (none can be stored); a tab is a fine tenant."""
    store = MilvusDocumentStore(uri=db, collection_name="controls", partition_key_field="tenant", embedding_dim=4)
    try:
        store.write_documents(
            [
                Document(id="c\x01", content="alpha\x02", meta={"tenant": "a\tb", "m": "v\x03", "k\x04": 1}),
                Document(id="plain", content="beta", meta={"tenant": "b", "m": "w"}),
            ]
        )
        cases: list[tuple[dict[str, Any], list[str]]] = [
            ({"field": "id", "operator": "==", "value": "c\x01"}, ["c\x01"]),
            ({"field": "content", "operator": "in", "value": ["alpha\x02", "nope"]}, ["c\x01"]),
            ({"field": "meta.m", "operator": "==", "value": "v\x03"}, ["c\x01"]),
            ({"field": "meta.m", "operator": "!=", "value": "v\x03"}, ["plain"]),
            ({"field": "meta.k\x04", "operator": "==", "value": 1}, ["c\x01"]),
            ({"field": "meta.tenant", "operator": "==", "value": "a\tb"}, ["c\x01"]),
            ({"field": "meta.tenant", "operator": "in", "value": ["a\x01", "b"]}, ["plain"]),
            ({"field": "meta.tenant", "operator": "==", "value": "a\ud800"}, []),
        ]
        for filters, expected in cases:
            assert sorted(d.id for d in store.filter_documents(filters)) == expected, filters
        assert store.count_documents_by_filter(cases[0][0]) == 1
        assert store.delete_by_filter(cases[6][0]) == 1
    finally:
        store.close()


def test_an_inexact_filter_keeps_its_tenant_condition_beside_the_ids(store: MilvusDocumentStore) -> None:
    """A filter Milvus cannot say exactly runs on the ids Haystack's matcher selects; the tenant condition stays in
    the expression, so a Milvus server still searches only that tenant's partition."""
    listed = {"field": "meta.tags", "operator": "!=", "value": ["x"]}  # a list: Milvus has no list literals
    inexact = {"operator": "AND", "conditions": [TENANT_A, listed]}
    assert not store._filter(inexact).exact
    expression = store._expression(inexact)
    assert expression is not None
    assert expression.startswith('(tenant in ["a"]) and (id in [')
    assert set(ids(store.embedding_search([QUERY], top_k=15, filters=inexact)[0])) == of_tenant("a")


def test_moving_a_document_to_another_tenant_moves_it_out_of_the_old_ones_results(db: str) -> None:
    store = MilvusDocumentStore(uri=db, collection_name="moves", partition_key_field="tenant")
    try:
        store.write_documents(tenant_corpus()[:8])
        assert store.update_by_filter({"field": "id", "operator": "==", "value": "d00"}, {"tenant": "b"}) == 1
        assert "d00" not in ids(store.embedding_search([QUERY], top_k=10, filters=TENANT_A)[0])
        assert store.get_documents_by_id(["d00"])[0].meta["tenant"] == "b"
        with pytest.raises(ValueError, match=r"update_by_filter: meta\['tenant'\] is its tenant"):
            store.update_by_filter({"field": "id", "operator": "==", "value": "d01"}, {"tenant": None})
    finally:
        store.close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "has partition key field 'tenant', but partition_key_field is None: set partition_key_field='tenant'"),
        ({"partition_key_field": "group"}, "has partition key field 'tenant', but partition_key_field is 'group'"),
    ],
)
def test_a_collection_keyed_otherwise_is_refused_naming_the_setting(
    store: MilvusDocumentStore, db: str, settings: dict[str, Any], message: str
) -> None:
    other = MilvusDocumentStore(uri=db, collection_name="tenants", **settings)
    try:
        with pytest.raises(MilvusCollectionError, match=message):
            other.warm_up()
    finally:
        other.close()


def test_an_unkeyed_collection_is_refused_for_a_store_with_tenants(db: str) -> None:
    plain = MilvusDocumentStore(uri=db, collection_name="plain")
    plain.write_documents(corpus(2))
    plain.close()
    keyed = MilvusDocumentStore(uri=db, collection_name="plain", partition_key_field="tenant")
    try:
        with pytest.raises(
            MilvusCollectionError, match="has no partition key field, but partition_key_field is 'tenant'"
        ):
            keyed.warm_up()
    finally:
        keyed.close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"partition_key_field": "meta.tenant"}, "names the meta key itself: 'tenant' for meta.tenant"),
        ({"partition_key_field": "1st"}, "partition_key_field must start with a letter"),
        ({"partition_key_field": "id"}, "field names must differ"),
        ({"partition_key_field": "_has_embedding"}, "and from '_has_embedding' \\(the store's own field\\)"),
        ({"num_partitions": 8}, "num_partitions needs partition_key_field"),
        ({"partition_key_field": "tenant", "num_partitions": 0}, r"num_partitions must be an integer in \[1, 1024\]"),
        (
            {"partition_key_field": "tenant", "num_partitions": 2000},
            r"num_partitions must be an integer in \[1, 1024\]",
        ),
    ],
)
def test_bad_tenant_settings_fail_at_init_naming_the_setting(
    tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        MilvusDocumentStore(uri=str(tmp_path / "m.db"), **settings)


def test_the_tenant_settings_survive_to_dict_from_dict_and_yaml(tmp_path: Path) -> None:
    store = MilvusDocumentStore(uri=str(tmp_path / "m.db"), partition_key_field="tenant", num_partitions=8)
    data = yaml.safe_load(yaml.safe_dump(store.to_dict()))
    assert data["init_parameters"]["partition_key_field"] == "tenant"
    assert MilvusDocumentStore.from_dict(data).settings == store.settings
