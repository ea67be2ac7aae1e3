"""MilvusSparseEmbeddingRetriever and its batch twin over a learned sparse field, on Milvus Lite.

Hand-written sparse embeddings (no model), in one collection with tenants written once for the module. The
retrievers return what the store's sparse search returns (batch result i is the single result for query i),
apply init and run filters by ``filter_policy``, ``top_k`` and ``score_threshold``, keep a pinned ``tenant`` whatever
the run-time filters say, run async, round-trip through ``to_dict``/``from_dict`` and a YAML pipeline, name a bad
query, and milvus-haystack's own sparse retriever runs the same search for a ``query_sparse_embedding``.
"""

import asyncio
from collections.abc import Iterator

import pytest
from haystack import Document, Pipeline
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.types import FilterPolicy
from milvus_haystack import MilvusSparseEmbeddingRetriever as UpstreamSparseRetriever

from components.retrievers.milvus import (
    MilvusBM25Retriever,
    MilvusHybridRetriever,
    MilvusSparseEmbeddingBatchRetriever,
    MilvusSparseEmbeddingRetriever,
)
from components.stores.milvus import MilvusDocumentStore
from tests.support.milvus import assert_same_results, corpus, ids

TENANT_A = {"field": "meta.tenant", "operator": "==", "value": "a"}
ODD = {"field": "meta.kind", "operator": "==", "value": "odd"}
QUERIES = [
    SparseEmbedding(indices=[0, 1, 2], values=[1.0, 0.5, 0.25]),
    SparseEmbedding(indices=[3, 7], values=[2.0, 1.0]),
    SparseEmbedding(indices=[5], values=[1.0]),
]


def documents() -> list[Document]:
    """20 documents: document i weighs term i % 8 by 1 + i/10 and term (i + 1) % 8 by 0.5; tenants a (i < 8), b."""
    found = []
    for i, document in enumerate(corpus(20)):
        weights = sorted({i % 8: 1.0 + i / 10, (i + 1) % 8: 0.5}.items())
        sparse = SparseEmbedding(indices=[term for term, _ in weights], values=[weight for _, weight in weights])
        meta = {**document.meta, "tenant": "a" if i < 8 else "b"}
        found.append(Document(id=document.id, content=document.content, meta=meta, sparse_embedding=sparse))
    return found


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusDocumentStore]:
    uri = str(tmp_path_factory.mktemp("sparse-retrievers") / "m.db")
    store = MilvusDocumentStore(
        uri=uri, partition_key_field="tenant", learned_sparse_field_name="splade", embedding_dim=4
    )
    store.write_documents(documents())
    yield store
    store.close()


def test_the_retrievers_return_what_the_store_finds_and_batch_i_is_single_i(store: MilvusDocumentStore) -> None:
    expected = store.sparse_embedding_search(QUERIES, 5)
    assert all(expected)
    single = MilvusSparseEmbeddingRetriever(store, top_k=5)
    batch = MilvusSparseEmbeddingBatchRetriever(store, top_k=5)
    assert_same_results([single.run(query_sparse_embedding=q)["documents"] for q in QUERIES], expected)
    assert_same_results(batch.run(query_sparse_embeddings=QUERIES)["documents"], expected)
    assert batch.run(query_sparse_embeddings=[])["documents"] == []
    async_run = asyncio.run(single.run_async(query_sparse_embedding=QUERIES[0]))["documents"]
    assert_same_results([async_run], expected[:1])
    async_batch = asyncio.run(batch.run_async(query_sparse_embeddings=QUERIES))["documents"]
    assert_same_results(async_batch, expected)


def test_filters_top_k_and_score_threshold(store: MilvusDocumentStore) -> None:
    replace = MilvusSparseEmbeddingRetriever(store, filters=TENANT_A, top_k=20)
    merge = MilvusSparseEmbeddingRetriever(store, filters=TENANT_A, top_k=20, filter_policy=FilterPolicy.MERGE)
    hits = replace.run(query_sparse_embedding=QUERIES[0])["documents"]
    assert hits
    assert {h.meta["tenant"] for h in hits} == {"a"}
    others = replace.run(query_sparse_embedding=QUERIES[0], filters=ODD)["documents"]
    assert {h.meta["kind"] for h in others} == {"odd"}
    assert {h.meta["tenant"] for h in others} == {"a", "b"}
    merged = merge.run(query_sparse_embedding=QUERIES[0], filters=ODD)["documents"]
    assert ids(merged) == [h.id for h in hits if h.meta["kind"] == "odd"]
    assert len(replace.run(query_sparse_embedding=QUERIES[0], top_k=2)["documents"]) == 2
    scores = [float(h.score or 0.0) for h in hits]
    threshold = scores[1]
    kept = replace.run(query_sparse_embedding=QUERIES[0], score_threshold=threshold)["documents"]
    assert ids(kept) == [h.id for h, score in zip(hits, scores, strict=True) if score >= threshold]
    assert len(kept) < len(hits)


RUN_FILTERS = [
    None,
    {"field": "meta.tenant", "operator": "==", "value": "b"},  # MERGE: the run-time condition on the field wins
    {"operator": "OR", "conditions": [ODD, {"field": "id", "operator": "!=", "value": ""}]},  # MERGE: init dropped
    {"field": "id", "operator": "!=", "value": ""},  # REPLACE: init dropped
]


@pytest.mark.parametrize("policy", [FilterPolicy.REPLACE, FilterPolicy.MERGE])
def test_a_pinned_tenant_holds_whatever_the_run_time_filters_say(
    store: MilvusDocumentStore, policy: FilterPolicy
) -> None:
    """Init filters on the tenant leak other tenants under either policy (Haystack's apply_filter_policy drops them);
    ``tenant`` is ANDed with the result, so every hit is tenant a's."""
    pinned = MilvusSparseEmbeddingRetriever(store, top_k=20, filter_policy=policy, tenant="a")
    batch = MilvusSparseEmbeddingBatchRetriever(store, top_k=20, filter_policy=policy, tenant="a")
    leaky = MilvusSparseEmbeddingRetriever(store, filters=TENANT_A, top_k=20, filter_policy=policy)
    leaked = set()
    for filters in RUN_FILTERS:
        hits = pinned.run(query_sparse_embedding=QUERIES[0], filters=filters)["documents"]
        assert {h.meta["tenant"] for h in hits} <= {"a"}, filters
        assert batch.run(query_sparse_embeddings=QUERIES[:1], filters=filters)["documents"] == [hits]
        leaked |= {h.meta["tenant"] for h in leaky.run(query_sparse_embedding=QUERIES[0], filters=filters)["documents"]}
    assert "b" in leaked  # what the setting is for
    assert pinned.run(query_sparse_embedding=QUERIES[0])["documents"]
    bm25 = MilvusBM25Retriever(store, top_k=20, filter_policy=policy, tenant="a")
    words = " ".join({word for document in documents() for word in (document.content or "").split()})
    assert {h.meta["tenant"] for h in bm25.run(query=words, filters=RUN_FILTERS[2])["documents"]} == {"a"}


def test_the_tenant_setting_round_trips_and_is_refused_where_it_cannot_hold(
    store: MilvusDocumentStore, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for retriever in (
        MilvusSparseEmbeddingRetriever(store, tenant="a"),
        MilvusHybridRetriever(store, tenant="a", ranker="weighted"),
    ):
        data = retriever.to_dict()
        assert data["init_parameters"]["tenant"] == "a"
        assert type(retriever).from_dict(data).tenant == "a"
    plain = MilvusDocumentStore(uri=str(tmp_path_factory.mktemp("plain") / "m.db"))
    with pytest.raises(ValueError, match="tenant 'a': the store has no partition_key_field"):
        MilvusSparseEmbeddingRetriever(plain, tenant="a")
    with pytest.raises(ValueError, match=r"tenant: meta\['tenant'\] is its tenant .* without control characters"):
        MilvusBM25Retriever(store, tenant="a\x01")


def test_a_bad_query_is_named(store: MilvusDocumentStore) -> None:
    single = MilvusSparseEmbeddingRetriever(store)
    with pytest.raises(ValueError, match="query_sparse_embedding must be a haystack SparseEmbedding, got list"):
        single.run(query_sparse_embedding=[1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"query_sparse_embeddings\[1\] must be a haystack SparseEmbedding"):
        MilvusSparseEmbeddingBatchRetriever(store).run(query_sparse_embeddings=[QUERIES[0], None])  # type: ignore[list-item]
    negative = SparseEmbedding(indices=[1], values=[-1.0])
    with pytest.raises(
        ValueError, match=r"query_sparse_embeddings\[0\]: its sparse_embedding \(Milvus field 'splade'\)"
    ):
        single.run(query_sparse_embedding=negative)


def test_the_retrievers_round_trip_through_to_dict_and_a_yaml_pipeline(store: MilvusDocumentStore) -> None:
    for retriever_class in (MilvusSparseEmbeddingRetriever, MilvusSparseEmbeddingBatchRetriever):
        retriever = retriever_class(store, filters=TENANT_A, top_k=3, score_threshold=0.5)
        data = retriever.to_dict()
        store_params = data["init_parameters"]["document_store"]["init_parameters"]
        assert (store_params["partition_key_field"], store_params["learned_sparse_field_name"]) == ("tenant", "splade")
        rebuilt = retriever_class.from_dict(data)
        assert rebuilt.to_dict() == data
        pipeline = Pipeline()
        pipeline.add_component("retriever", retriever)
        loaded = Pipeline.loads(pipeline.dumps())
        assert loaded.get_component("retriever").to_dict() == data  # type: ignore[attr-defined]
    one = MilvusSparseEmbeddingRetriever.from_dict(MilvusSparseEmbeddingRetriever(store, top_k=3).to_dict())
    try:
        assert ids(one.run(query_sparse_embedding=QUERIES[1])["documents"]) == ids(
            store.sparse_embedding_search(QUERIES[1:2], 3)[0]
        )
    finally:
        one.document_store.close()


def test_milvus_haystacks_sparse_retriever_searches_the_learned_field(store: MilvusDocumentStore) -> None:
    upstream = UpstreamSparseRetriever(store, top_k=4, filters=TENANT_A)
    expected = store.sparse_embedding_search(QUERIES[:1], 4, TENANT_A)
    assert_same_results([upstream.run(query_sparse_embedding=QUERIES[0])["documents"]], expected)
