"""milvus-haystack's own retrievers over our MilvusDocumentStore, on Milvus Lite and on `milvus-lite server`.

Our store subclasses milvus-haystack's, so its retrievers accept it: ``MilvusEmbeddingRetriever``,
``MilvusSparseEmbeddingRetriever`` with ``query_text`` (the collection's sparse field is Milvus's BM25 function)
and ``MilvusHybridRetriever`` with ``query_text`` and any pymilvus ranker return exactly the documents (and
scores) of our retrievers, on the default schema and on renamed fields with COSINE. The attributes upstream
reads mean what upstream says. Refused, with the reason in the error: a ``SparseEmbedding`` query (no learned
sparse field to search), sparse search on a store built without BM25, and rebuilding an upstream retriever
of our store from its dict (upstream's ``from_dict`` builds only upstream's own store type).
"""

from collections.abc import Iterator
from typing import Any

import pytest
from haystack import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from milvus_haystack import MilvusEmbeddingRetriever as UpstreamEmbeddingRetriever
from milvus_haystack import MilvusHybridRetriever as UpstreamHybridRetriever
from milvus_haystack import MilvusSparseEmbeddingRetriever as UpstreamSparseRetriever
from milvus_haystack.document_store import MilvusStoreError
from milvus_haystack.utils.constant import EmbeddingMode
from pymilvus import RRFRanker, WeightedRanker

from components.retrievers.milvus import MilvusBM25Retriever, MilvusEmbeddingRetriever, MilvusHybridRetriever
from components.stores.milvus import MilvusDocumentStore
from tests.support import milvus as milvus_support
from tests.support.milvus import DIM, corpus, ids

milvus_server = milvus_support.milvus_server
milvus_module_uri = milvus_support.milvus_module_uri

TEXT_ONLY = [Document(id=f"t{i}", content=f"alpha river text only {i}", meta={"kind": "odd", "n": i}) for i in range(4)]
STORES = {
    "default": {},
    "renamed COSINE": {
        "collection_name": "renamed",
        "id_field_name": "doc_id",
        "vector_field_name": "emb",
        "text_field_name": "body",
        "sparse_field_name": "bm25",
        "metric_type": "COSINE",
        "search_params": {"params": {"ef": 64}},
    },
}
FILTERS = [
    None,
    {"field": "meta.kind", "operator": "==", "value": "odd"},
    {"operator": "NOT", "conditions": [{"field": "meta.group", "operator": "in", "value": ["a", "b"]}]},
    {"field": "meta.n", "operator": "!=", "value": None},
]
QUERY = "alpha river stone"


@pytest.fixture(scope="module", params=list(STORES))
def store(request: pytest.FixtureRequest, milvus_module_uri: str) -> Iterator[MilvusDocumentStore]:
    """The corpus plus documents without an embedding, in a collection per configuration."""
    settings = {"collection_name": "upstream", **STORES[request.param]}
    store = MilvusDocumentStore(uri=milvus_module_uri, **settings)
    store.write_documents(corpus() + TEXT_ONLY)
    yield store
    store.close()


@pytest.mark.parametrize("filters", FILTERS)
def test_upstream_dense_retriever_returns_ours(store: MilvusDocumentStore, filters: dict[str, Any] | None) -> None:
    query = corpus()[7].embedding
    got = UpstreamEmbeddingRetriever(store, filters=filters, top_k=30).run(query)["documents"]
    assert got
    assert got == MilvusEmbeddingRetriever(store, filters=filters, top_k=30).run(query_embedding=query)["documents"]
    assert not {d.id for d in TEXT_ONLY} & set(ids(got))  # dense search never returns a document without embedding


@pytest.mark.parametrize("filters", FILTERS)
def test_upstream_sparse_retriever_is_our_bm25(store: MilvusDocumentStore, filters: dict[str, Any] | None) -> None:
    got = UpstreamSparseRetriever(store, filters=filters, top_k=8).run(query_text=QUERY)["documents"]
    assert got
    assert got == MilvusBM25Retriever(store, filters=filters, top_k=8).run(query=QUERY)["documents"]


@pytest.mark.parametrize(
    ("reranker", "ours"),
    [
        (None, {}),
        (RRFRanker(20), {"rrf_k": 20}),
        (WeightedRanker(0.7, 0.3), {"ranker": "weighted", "weights": [0.7, 0.3]}),
    ],
    ids=["default", "rrf", "weighted"],
)
def test_upstream_hybrid_retriever_returns_ours(
    store: MilvusDocumentStore, reranker: Any, ours: dict[str, Any]
) -> None:
    query = corpus()[4].embedding
    upstream = UpstreamHybridRetriever(store, top_k=12, reranker=reranker, filters=FILTERS[1])
    got = upstream.run(query_embedding=query, query_text=QUERY)["documents"]
    assert got
    expected = MilvusHybridRetriever(store, top_k=12, filters=FILTERS[1], **ours).run(
        query=QUERY, query_embedding=query
    )
    assert got == expected["documents"]


def test_upstream_attributes_mean_what_upstream_says(store: MilvusDocumentStore) -> None:
    settings = store.settings
    assert store.search_params == settings.dense_search()
    assert store._get_index()["metric_type"] == settings.metric_type  # upstream's own method, on our attributes
    described = store.client.describe_collection(settings.collection_name)["fields"]
    assert store.fields == [field["name"] for field in described]
    assert (store._primary_field, store._text_field, store._vector_field) == (
        settings.id_field_name,
        settings.text_field_name,
        settings.vector_field_name,
    )
    assert store._sparse_vector_field == settings.sparse_field_name
    function = store.builtin_function[0]
    assert (function.input_field_names, function.output_field_names) == (
        [settings.text_field_name],
        [settings.sparse_field_name],
    )
    assert store._sparse_mode == EmbeddingMode.BUILTIN_FUNCTION  # upstream's reading of that function
    parsed = store._parse_document(store.client.query(settings.collection_name, ids=["t0"], output_fields=["*"])[0])
    assert parsed == store.get_documents_by_id(["t0"])[0]
    assert parsed.embedding is None  # upstream's row parser, ours: the placeholder vector is not an embedding


def test_a_sparse_embedding_query_is_refused_naming_query_text(store: MilvusDocumentStore) -> None:
    sparse = SparseEmbedding(indices=[0, 1], values=[1.0, 2.0])
    runs = [
        lambda: UpstreamSparseRetriever(store).run(query_sparse_embedding=sparse),
        lambda: UpstreamHybridRetriever(store).run(query_embedding=[0.5] * DIM, query_sparse_embedding=sparse),
    ]
    for run in runs:
        with pytest.raises(MilvusStoreError, match="BM25 function over the text, so sparse and hybrid retrieval need"):
            run()


def test_sparse_retrieval_on_a_store_without_bm25_is_refused(milvus_module_uri: str) -> None:
    store = MilvusDocumentStore(uri=milvus_module_uri, collection_name="upstream_dense", bm25=False)
    store.write_documents(corpus(6))
    assert store._sparse_vector_field is None
    assert store.builtin_function == []
    with pytest.raises(MilvusStoreError, match="BM25 search needs bm25=True"):
        UpstreamSparseRetriever(store).run(query_text=QUERY)
    assert UpstreamEmbeddingRetriever(store, top_k=2).run(corpus(6)[2].embedding)["documents"][0].id == "d02"
    store.close()


def test_upstream_from_dict_cannot_rebuild_our_store(store: MilvusDocumentStore) -> None:
    """Upstream's from_dict reads its own store's init parameters only; our retrievers round-trip our store."""
    data = UpstreamEmbeddingRetriever(store).to_dict()
    assert data["init_parameters"]["document_store"] == store.to_dict()
    with pytest.raises(KeyError, match="connection_args"):
        UpstreamEmbeddingRetriever.from_dict(data)
    rebuilt = MilvusEmbeddingRetriever.from_dict(MilvusEmbeddingRetriever(store).to_dict())
    assert rebuilt.document_store.to_dict() == store.to_dict()
