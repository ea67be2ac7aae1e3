"""FAISSEmbeddingRetriever and FAISSBatchEmbeddingRetriever: behaviour, serialisation, YAML pipelines."""

from pathlib import Path

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.document_stores.types import FilterPolicy

from components.retrievers import FAISSBatchEmbeddingRetriever, FAISSEmbeddingRetriever
from components.stores import FAISSDocumentStore

DIM = 8
RETRIEVERS = [FAISSEmbeddingRetriever, FAISSBatchEmbeddingRetriever]


@pytest.fixture
def vectors() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((40, DIM)).astype(np.float32)


@pytest.fixture
def store(vectors: np.ndarray, tmp_path: Path) -> FAISSDocumentStore:
    store = FAISSDocumentStore(path=str(tmp_path / "index"), metric="cosine")
    store.write_documents(
        [
            Document(id=f"d{i}", content=f"doc {i}", meta={"half": i % 2}, embedding=v.tolist())
            for i, v in enumerate(vectors)
        ]
    )
    return store


def test_single_retriever_returns_the_nearest_documents(store: FAISSDocumentStore, vectors: np.ndarray) -> None:
    documents = FAISSEmbeddingRetriever(store, top_k=3).run(query_embedding=vectors[5].tolist())["documents"]
    assert len(documents) == 3
    assert documents[0].id == "d5"
    assert documents[0].score == pytest.approx(1.0, abs=1e-5)
    assert [doc.score for doc in documents] == sorted((doc.score for doc in documents), reverse=True)
    assert all(doc.meta["retrieval_type"] == "dense" and doc.embedding is None for doc in documents)


def test_batch_results_equal_single_results(store: FAISSDocumentStore, vectors: np.ndarray) -> None:
    single = FAISSEmbeddingRetriever(store, top_k=4)
    batch = FAISSBatchEmbeddingRetriever(store, top_k=4)
    queries = (vectors[:6] + 0.3).tolist()
    batched = batch.run(query_embeddings=queries)["documents"]
    assert batched == [single.run(query_embedding=query)["documents"] for query in queries]
    assert batch.run(query_embeddings=[])["documents"] == []


def test_top_k_and_return_embedding(store: FAISSDocumentStore, vectors: np.ndarray) -> None:
    retriever = FAISSEmbeddingRetriever(store, top_k=2, return_embedding=True)
    assert len(retriever.run(query_embedding=vectors[0].tolist(), top_k=7)["documents"]) == 7
    assert retriever.run(query_embedding=vectors[0].tolist())["documents"][0].embedding == vectors[0].tolist()


@pytest.mark.parametrize("retriever_class", RETRIEVERS)
def test_filter_policies(store: FAISSDocumentStore, vectors: np.ndarray, retriever_class: type) -> None:
    init_filter = {"field": "meta.half", "operator": "==", "value": 1}
    run_filter = {"field": "content", "operator": "in", "value": ["doc 2", "doc 3", "doc 4"]}
    replace = retriever_class(store, filters=init_filter, top_k=10)
    merge = retriever_class(store, filters=init_filter, top_k=10, filter_policy=FilterPolicy.MERGE)

    def ids(retriever: FAISSEmbeddingRetriever | FAISSBatchEmbeddingRetriever, **kwargs: dict) -> list[str]:
        query = vectors[0].tolist()
        if retriever_class is FAISSBatchEmbeddingRetriever:
            return sorted(doc.id for doc in retriever.run(query_embeddings=[query], **kwargs)["documents"][0])
        return sorted(doc.id for doc in retriever.run(query_embedding=query, **kwargs)["documents"])

    assert len(ids(replace)) == 10
    assert all(int(doc_id[1:]) % 2 == 1 for doc_id in ids(replace))
    assert ids(replace, filters=run_filter) == ["d2", "d3", "d4"]
    assert ids(merge, filters=run_filter) == ["d3"]


@pytest.mark.parametrize("retriever_class", RETRIEVERS)
def test_bad_parameters_raise_value_errors(store: FAISSDocumentStore, retriever_class: type) -> None:
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 10000\], got 0"):
        retriever_class(store, top_k=0)
    with pytest.raises(ValueError, match="document_store must be a FAISSDocumentStore"):
        retriever_class(document_store="not a store")
    retriever = retriever_class(store)
    bad_top_k = r"top_k must be an integer in \[1, 10000\], got -1"
    if retriever_class is FAISSEmbeddingRetriever:
        with pytest.raises(ValueError, match=bad_top_k):
            retriever.run(query_embedding=[0.1] * DIM, top_k=-1)
    else:
        with pytest.raises(ValueError, match=bad_top_k):
            retriever.run(query_embeddings=[[0.1] * DIM], top_k=-1)


def test_wrong_query_sizes_are_named(store: FAISSDocumentStore) -> None:
    with pytest.raises(ValueError, match=r"query_embeddings\[1\] has 3 values, expected 8"):
        FAISSBatchEmbeddingRetriever(store).run(query_embeddings=[[0.1] * DIM, [0.1] * 3])
    with pytest.raises(ValueError, match="query embeddings have 3 values, this store has embedding_dim=8"):
        FAISSEmbeddingRetriever(store).run(query_embedding=[0.1] * 3)


@pytest.mark.parametrize("retriever_class", RETRIEVERS)
async def test_run_async_matches_run(store: FAISSDocumentStore, vectors: np.ndarray, retriever_class: type) -> None:
    retriever = retriever_class(store, top_k=3)
    if retriever_class is FAISSEmbeddingRetriever:
        inputs = {"query_embedding": vectors[1].tolist()}
    else:
        inputs = {"query_embeddings": vectors[:3].tolist()}
    assert await retriever.run_async(**inputs) == retriever.run(**inputs)


@pytest.mark.parametrize("retriever_class", RETRIEVERS)
def test_to_dict_from_dict_round_trip(store: FAISSDocumentStore, retriever_class: type) -> None:
    retriever = retriever_class(
        store,
        filters={"field": "meta.half", "operator": "==", "value": 0},
        top_k=4,
        filter_policy=FilterPolicy.MERGE,
        return_embedding=True,
    )
    data = retriever.to_dict()
    assert data["init_parameters"]["document_store"]["init_parameters"]["path"] == store.path
    assert data["init_parameters"]["filter_policy"] == "merge"
    rebuilt = retriever_class.from_dict(data)
    assert rebuilt.to_dict() == data
    assert isinstance(rebuilt.document_store, FAISSDocumentStore)


@pytest.mark.parametrize("retriever_class", RETRIEVERS)
def test_yaml_pipeline_round_trip_finds_the_same_documents(
    store: FAISSDocumentStore, vectors: np.ndarray, retriever_class: type
) -> None:
    pipeline = Pipeline()
    pipeline.add_component("retriever", retriever_class(store, top_k=3))
    loaded = Pipeline.loads(pipeline.dumps())  # the loaded store reopens the saved directory lazily
    if retriever_class is FAISSEmbeddingRetriever:
        inputs = {"retriever": {"query_embedding": vectors[9].tolist()}}
    else:
        inputs = {"retriever": {"query_embeddings": vectors[8:10].tolist()}}
    expected = pipeline.run(inputs)
    assert loaded.run(inputs) == expected
    assert loaded.get_component("retriever").document_store is not store


def test_semantic_search_with_minilm(tmp_path: Path, minilm_path: str) -> None:
    """Real embeddings end to end: MiniLM vectors from a .npy, cosine scores, the right passage first."""
    from sentence_transformers import SentenceTransformer

    passages = [
        "The mitochondria is the powerhouse of the cell.",
        "Paris is the capital and most populous city of France.",
        "Python's argparse module parses command-line arguments.",
        "Photosynthesis converts light energy into chemical energy in plants.",
    ]
    model = SentenceTransformer(minilm_path, device="cpu")
    np.save(tmp_path / "passages.npy", model.encode(passages, convert_to_numpy=True).astype(np.float32))
    store = FAISSDocumentStore(path=str(tmp_path / "minilm"), metric="cosine")
    store.from_npy([Document(content=text) for text in passages], str(tmp_path / "passages.npy"))
    queries = ["how do plants make energy from sunlight", "parse CLI flags in python", "French capital"]
    found = FAISSBatchEmbeddingRetriever(FAISSDocumentStore.load(str(tmp_path / "minilm")), top_k=2).run(
        query_embeddings=model.encode(queries).tolist()
    )["documents"]
    assert [hits[0].content for hits in found] == [passages[3], passages[2], passages[1]]
    assert all(0.3 < hits[0].score <= 1.0 for hits in found)


async def test_async_pipelines_write_and_retrieve(tmp_path: Path, vectors: np.ndarray) -> None:
    """What Hayhooks does: DocumentWriter and the retriever run through their run_async (Pipeline.run_async)."""
    from haystack.components.writers import DocumentWriter

    store = FAISSDocumentStore(path=str(tmp_path / "async"), metric="cosine")
    indexing = Pipeline()
    indexing.add_component("writer", DocumentWriter(store))
    docs = [Document(id=f"a{i}", content=f"doc {i}", embedding=v.tolist()) for i, v in enumerate(vectors)]
    assert (await indexing.run_async({"writer": {"documents": docs}}))["writer"]["documents_written"] == 40
    search = Pipeline()
    search.add_component("retriever", FAISSEmbeddingRetriever(FAISSDocumentStore.load(store.path), top_k=2))
    found = await Pipeline.loads(search.dumps()).run_async({"retriever": {"query_embedding": vectors[4].tolist()}})
    assert found["retriever"]["documents"][0].id == "a4"
