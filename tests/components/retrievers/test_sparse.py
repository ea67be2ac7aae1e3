"""SparseEmbeddingRetriever and its batch twin: top_k, filters and their policy, score_threshold, YAML, async."""

import asyncio

import pytest
from haystack import Document, Pipeline
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import FilterPolicy

from components.retrievers.sparse.batch_retriever import SparseEmbeddingBatchRetriever
from components.retrievers.sparse.retriever import SparseEmbeddingRetriever
from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.sparse.document_store import SparseDocumentStore


def vec(pairs: dict[int, float]) -> SparseEmbedding:
    """A sparse vector from {term id: weight}."""
    return SparseEmbedding(indices=list(pairs), values=list(pairs.values()))


@pytest.fixture
def store() -> SparseDocumentStore:
    """Four documents sharing term 7 with weights 4, 3, 2, 1; two of year 2020."""
    store = SparseDocumentStore()
    store.write_documents(
        [
            Document(
                id=f"d{w}", content=f"weight {w}", meta={"year": 2020 if w % 2 else 2021}, sparse_embedding=vec({7: w})
            )
            for w in (4.0, 3.0, 2.0, 1.0)
        ]
    )
    return store


def ids(documents: list[Document]) -> list[str]:
    """The ids of DOCUMENTS, in order."""
    return [d.id for d in documents]


def test_top_k_filters_and_threshold_apply_per_run(store: SparseDocumentStore) -> None:
    """Init settings apply unless a run overrides them; MERGE combines init and run filters."""
    year = {"field": "meta.year", "operator": "==", "value": 2020}
    retriever = SparseEmbeddingRetriever(store, top_k=3, score_threshold=2.5)
    assert ids(retriever.run(query_sparse_embedding=vec({7: 1.0}))["documents"]) == ["d4.0", "d3.0"]
    assert ids(retriever.run(query_sparse_embedding=vec({7: 1.0}), score_threshold=0.0, top_k=4)["documents"]) == [
        "d4.0",
        "d3.0",
        "d2.0",
        "d1.0",
    ]
    assert ids(retriever.run(query_sparse_embedding=vec({7: 1.0}), filters=year)["documents"]) == ["d3.0"]
    merged = SparseEmbeddingRetriever(store, filters=year, filter_policy=FilterPolicy.MERGE)
    later = {"field": "content", "operator": "==", "value": "weight 4.0"}  # a 2021 document
    assert merged.run(query_sparse_embedding=vec({7: 1.0}), filters=later)["documents"] == []


def test_batch_gives_one_list_per_query_as_the_single_retriever(store: SparseDocumentStore) -> None:
    """Each query's list equals the single retriever's answer; a malformed vector is named by position."""
    queries = [vec({7: 1.0}), vec({8: 1.0}), vec({7: -1.0})]
    batch = SparseEmbeddingBatchRetriever(store, top_k=2).run(query_sparse_embeddings=queries)["documents"]
    single = SparseEmbeddingRetriever(store, top_k=2)
    assert [ids(hits) for hits in batch] == [ids(single.run(query_sparse_embedding=q)["documents"]) for q in queries]
    assert ids(batch[2]) == ["d1.0", "d2.0"]  # negative query weight: the smallest products rank first
    with pytest.raises(ValueError, match=r"query_sparse_embeddings\[1\]: a term id is listed twice"):
        SparseEmbeddingBatchRetriever(store).run(
            query_sparse_embeddings=[vec({7: 1.0}), SparseEmbedding([1, 1], [1.0, 2.0])]
        )


def test_settings_are_checked_at_init() -> None:
    """A wrong store type, top_k or threshold is refused when the retriever is made."""
    with pytest.raises(TypeError, match="document_store must be a SparseDocumentStore"):
        SparseEmbeddingRetriever(BM25DocumentStore())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="top_k"):
        SparseEmbeddingBatchRetriever(SparseDocumentStore(), top_k=0)
    with pytest.raises(ValueError, match="score_threshold"):
        SparseEmbeddingRetriever(SparseDocumentStore(), score_threshold=float("nan"))
    with pytest.raises(ValueError, match="return_embedding must be true or false"):
        SparseEmbeddingBatchRetriever(SparseDocumentStore(), return_embedding="yes")  # type: ignore[arg-type]


def test_hits_carry_their_vectors_only_when_asked(store: SparseDocumentStore) -> None:
    """Off by default (a served search would send every hit's vector, hundreds of terms under SPLADE)."""
    plain = SparseEmbeddingRetriever(store, top_k=2).run(query_sparse_embedding=vec({7: 1.0}))["documents"]
    assert [d.sparse_embedding for d in plain] == [None, None]
    asked = SparseEmbeddingBatchRetriever(store, top_k=2, return_embedding=True)
    [hits] = asked.run(query_sparse_embeddings=[vec({7: 1.0})])["documents"]
    assert [d.sparse_embedding for d in hits] == [vec({7: 4.0}), vec({7: 3.0})]


def test_yaml_round_trip_keeps_the_store_and_every_setting(tmp_path) -> None:
    """A pipeline with both retrievers loads back from YAML with the same settings and saved index."""
    store = SparseDocumentStore(path=str(tmp_path / "sparse"))
    store.write_documents([Document(id="a", content="alpha", sparse_embedding=vec({1: 1.0}))])
    pipeline = Pipeline()
    pipeline.add_component("one", SparseEmbeddingRetriever(store, top_k=3, score_threshold=0.5, return_embedding=True))
    pipeline.add_component("many", SparseEmbeddingBatchRetriever(store, filter_policy=FilterPolicy.MERGE))
    loaded = Pipeline.loads(pipeline.dumps())
    for name in ("one", "many"):
        assert loaded.get_component(name).to_dict() == pipeline.get_component(name).to_dict()
    assert loaded.get_component("one").return_embedding is True
    assert ids(loaded.get_component("one").run(query_sparse_embedding=vec({1: 2.0}))["documents"]) == ["a"]


def test_run_async_answers_as_run(store: SparseDocumentStore) -> None:
    """The async twins return what run returns."""
    retriever = SparseEmbeddingRetriever(store, top_k=2)
    batch = SparseEmbeddingBatchRetriever(store, top_k=2)
    assert ids(asyncio.run(retriever.run_async(query_sparse_embedding=vec({7: 1.0})))["documents"]) == ["d4.0", "d3.0"]
    found = asyncio.run(batch.run_async(query_sparse_embeddings=[vec({7: 1.0})]))["documents"]
    assert [ids(hits) for hits in found] == [["d4.0", "d3.0"]]
