"""The Milvus retrievers on Milvus Lite and on a real `milvus-lite server`: the same assertions against both URIs.

Single and batch retrievers agree query by query (dense, BM25, hybrid), carry ``meta["retrieval_type"]``, run
async, serialise without the token's value, refuse bad input exactly as the FAISS and BM25 retrievers do, and
feed ``MixRetrieveRanker`` unchanged in ``pipelines/milvus_mix_search.yaml`` (real MiniLM, the sample corpus).
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Document, Pipeline
from haystack.document_stores.types import FilterPolicy

from components.checks import check_filters, check_query, check_top_k
from components.rankers import MixRetrieveRanker
from components.retrievers.milvus import (
    MilvusBatchEmbeddingRetriever,
    MilvusBM25BatchRetriever,
    MilvusBM25Retriever,
    MilvusEmbeddingRetriever,
    MilvusHybridBatchRetriever,
    MilvusHybridRetriever,
)
from components.stores.milvus import MilvusDocumentStore
from needle_retrieval.pipelines import files as pf
from tests.support import milvus as milvus_support
from tests.support.milvus import DIM, assert_same_results, corpus, ids
from tests.support.paths import SAMPLE

milvus_server = milvus_support.milvus_server
milvus_module_uri = milvus_support.milvus_module_uri

QUERIES = ["alpha river stone", "omega", "kappa lambda sigma theta", "cloud beta"]
ODD = {"field": "meta.kind", "operator": "==", "value": "odd"}
LOW = {"field": "meta.n", "operator": "<", "value": 20}
SINGLE = [MilvusEmbeddingRetriever, MilvusBM25Retriever, MilvusHybridRetriever]
BATCH = [MilvusBatchEmbeddingRetriever, MilvusBM25BatchRetriever, MilvusHybridBatchRetriever]
RETRIEVAL_TYPE = {"Embedding": "dense", "BM25": "sparse", "Hybrid": "hybrid"}


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return corpus()


@pytest.fixture(scope="module")
def store(milvus_module_uri: str, docs: list[Document]) -> Iterator[MilvusDocumentStore]:
    store = MilvusDocumentStore(uri=milvus_module_uri, collection_name="retrievers")
    store.write_documents(docs)
    yield store
    store.close()


def kind(retriever_class: type) -> str:
    return next(value for key, value in RETRIEVAL_TYPE.items() if key in retriever_class.__name__)


def single_inputs(retriever_class: type, docs: list[Document], i: int) -> dict[str, Any]:
    """The run inputs of a single-query retriever for query i."""
    mode = kind(retriever_class)
    inputs: dict[str, Any] = {}
    if mode in ("dense", "hybrid"):
        inputs["query_embedding"] = docs[i].embedding
    if mode in ("sparse", "hybrid"):
        inputs["query"] = QUERIES[i]
    return inputs


def batch_inputs(retriever_class: type, docs: list[Document]) -> dict[str, Any]:
    mode = kind(retriever_class)
    inputs: dict[str, Any] = {}
    if mode in ("dense", "hybrid"):
        inputs["query_embeddings"] = [d.embedding for d in docs[: len(QUERIES)]]
    if mode in ("sparse", "hybrid"):
        inputs["queries"] = QUERIES
    return inputs


@pytest.mark.parametrize(("single_class", "batch_class"), list(zip(SINGLE, BATCH, strict=True)))
@pytest.mark.parametrize("filters", [None, ODD], ids=["unfiltered", "filtered"])
def test_batch_result_i_equals_single_result_i(
    store: MilvusDocumentStore, docs: list[Document], single_class: type, batch_class: type, filters: Any
) -> None:
    single, batch = single_class(store, top_k=5), batch_class(store, top_k=5)
    singles = [single.run(**single_inputs(single_class, docs, i), filters=filters)["documents"] for i in range(4)]
    batched = batch.run(**batch_inputs(batch_class, docs), filters=filters)["documents"]
    assert_same_results(batched, singles)
    assert all(len(hits) == 5 for hits in singles)
    assert {hit.meta["retrieval_type"] for hits in singles for hit in hits} == {kind(single_class)}
    if filters:
        assert {hit.meta["kind"] for hits in singles for hit in hits} == {"odd"}


def test_retrievers_return_what_the_store_finds(store: MilvusDocumentStore, docs: list[Document]) -> None:
    embedding, query = docs[6].embedding, QUERIES[0]
    dense = MilvusEmbeddingRetriever(store, top_k=4).run(query_embedding=embedding)["documents"]
    assert_same_results([dense], store.embedding_search([embedding], 4))
    assert dense[0].id == "d06"
    bm25 = MilvusBM25Retriever(store, top_k=4).run(query=query)["documents"]
    assert_same_results([bm25], store.bm25_search([query], 4))
    assert all(hit.score > 0 for hit in bm25)
    for ranker, weights in (("rrf", None), ("weighted", [0.7, 0.3])):
        retriever = MilvusHybridRetriever(store, top_k=4, ranker=ranker, rrf_k=20, weights=weights)
        hybrid = retriever.run(query=query, query_embedding=embedding)["documents"]
        fusion = {"ranker": ranker, "rrf_k": 20, "weights": tuple(weights or (0.5, 0.5))}
        assert_same_results([hybrid], store.hybrid_search([query], [embedding], 4, **fusion))


@pytest.mark.parametrize("retriever_class", SINGLE)
def test_filter_policies_and_top_k(store: MilvusDocumentStore, docs: list[Document], retriever_class: type) -> None:
    inputs = single_inputs(retriever_class, docs, 0)
    replace = retriever_class(store, filters=ODD, top_k=3)
    assert {d.meta["kind"] for d in replace.run(**inputs)["documents"]} == {"odd"}
    replaced = replace.run(**inputs, filters=LOW, top_k=8)["documents"]
    assert len(replaced) == 8
    assert all(d.meta["n"] < 20 for d in replaced)
    assert {d.meta["kind"] for d in replaced} == {"odd", "even"}  # REPLACE: the init filter is gone
    merge = retriever_class(store, filters=ODD, top_k=3, filter_policy=FilterPolicy.MERGE)
    merged = merge.run(**inputs, filters=LOW, top_k=20)["documents"]
    both = {d.id for d in docs if d.meta["kind"] == "odd" and d.meta["n"] < 20}
    if kind(retriever_class) == "sparse":  # BM25 finds only the documents holding a query term
        terms = set(inputs["query"].split())
        both = {d.id for d in docs if d.id in both and terms & set(d.content.split())}
    assert sorted(ids(merged)) == sorted(both)


@pytest.mark.parametrize("retriever_class", SINGLE + BATCH)
async def test_run_async_matches_run(store: MilvusDocumentStore, docs: list[Document], retriever_class: type) -> None:
    retriever = retriever_class(store, top_k=3)
    inputs = (
        batch_inputs(retriever_class, docs) if retriever_class in BATCH else single_inputs(retriever_class, docs, 1)
    )
    got, expected = (await retriever.run_async(**inputs))["documents"], retriever.run(**inputs)["documents"]
    if retriever_class in BATCH:
        assert_same_results(got, expected)
    else:
        assert_same_results([got], [expected])


@pytest.mark.parametrize("retriever_class", SINGLE + BATCH)
def test_to_dict_from_dict_round_trip(
    store: MilvusDocumentStore, docs: list[Document], retriever_class: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MILVUS_TOKEN", "root:very-secret-value")
    extra = {"ranker": "weighted", "weights": [0.2, 0.8]} if "Hybrid" in retriever_class.__name__ else {}
    retriever = retriever_class(store, filters=ODD, top_k=4, filter_policy=FilterPolicy.MERGE, **extra)
    data = retriever.to_dict()
    store_params = data["init_parameters"]["document_store"]["init_parameters"]
    assert store_params["token"] == {"type": "env_var", "env_vars": ["MILVUS_TOKEN"], "strict": False}
    assert store_params["uri"] == store.settings.uri
    rebuilt = retriever_class.from_dict(data)
    assert rebuilt.to_dict() == data
    assert rebuilt.document_store is not store
    pipeline = Pipeline()
    pipeline.add_component("retriever", retriever)
    text = pipeline.dumps()
    assert "very-secret-value" not in text
    assert "MILVUS_TOKEN" in text
    loaded = Pipeline.loads(text)
    inputs = (
        batch_inputs(retriever_class, docs) if retriever_class in BATCH else single_inputs(retriever_class, docs, 2)
    )
    got = loaded.run({"retriever": inputs})["retriever"]["documents"]
    expected = retriever.run(**inputs)["documents"]
    assert_same_results(*([got], [expected]) if retriever_class in SINGLE else (got, expected))
    loaded.get_component("retriever").document_store.close()


BAD_TOP_K = [0, -1, 10001, 1.5, "3", True]
BAD_QUERIES = ["", "   ", "x" * (1024 * 1024 + 1), "\ud800", 5, None, ["query"]]
BAD_FILTERS = [
    "x",
    {"field": "meta.kind"},
    {"field": "meta.kind", "operator": "~", "value": "a"},
    {"field": "meta.kind", "operator": "in", "value": "a"},
    {"operator": "XOR", "conditions": []},
    {"operator": "OR", "conditions": [ODD, {"field": "meta.kind", "value": "a"}]},
]


def expected_error(check: Any, value: Any, *args: Any) -> tuple[type[Exception], str]:
    """What the shared check raises for ``value``: every component must raise the same."""
    try:
        check(value, *args)
    except Exception as error:
        return type(error), str(error)
    raise AssertionError(f"{value!r} passes {check.__name__}")


def assert_raises_as(expected: tuple[type[Exception], str], call: Any, **kwargs: Any) -> None:
    with pytest.raises(expected[0]) as caught:
        call(**kwargs)
    assert str(caught.value) == expected[1]


@pytest.mark.parametrize("retriever_class", SINGLE + BATCH)
def test_bad_input_fails_as_in_the_faiss_retrievers(
    store: MilvusDocumentStore, docs: list[Document], retriever_class: type
) -> None:
    batch = retriever_class in BATCH
    inputs = batch_inputs(retriever_class, docs) if batch else single_inputs(retriever_class, docs, 0)
    retriever = retriever_class(store)
    for value in BAD_TOP_K:
        assert_raises_as(expected_error(check_top_k, value), retriever_class, document_store=store, top_k=value)
        assert_raises_as(expected_error(check_top_k, value), retriever.run, **inputs, top_k=value)
    for value in BAD_FILTERS:
        assert_raises_as(expected_error(check_filters, value), retriever_class, document_store=store, filters=value)
        assert_raises_as(expected_error(check_filters, value), retriever.run, **inputs, filters=value)
    if "query" in inputs:
        for value in BAD_QUERIES:
            assert_raises_as(expected_error(check_query, value), retriever.run, **{**inputs, "query": value})
    if "queries" in inputs:
        for value in BAD_QUERIES:
            error = expected_error(check_query, value, "queries[1]")
            assert_raises_as(error, retriever.run, **{**inputs, "queries": [QUERIES[0], value, *QUERIES[2:]]})
    with pytest.raises(ValueError, match="document_store must be a MilvusDocumentStore, got str"):
        retriever_class(document_store="not a store")


def test_query_embeddings_of_another_size_are_named(store: MilvusDocumentStore) -> None:
    with pytest.raises(ValueError, match=rf"query_embeddings\[1\] has 3 values; the collection's vectors have {DIM}"):
        MilvusBatchEmbeddingRetriever(store).run(query_embeddings=[[0.1] * DIM, [0.1] * 3])
    with pytest.raises(ValueError, match=rf"query_embedding has 3 values; the collection's vectors have {DIM}"):
        MilvusEmbeddingRetriever(store).run(query_embedding=[0.1] * 3)
    with pytest.raises(ValueError, match=r"query_embedding must be a list of finite numbers"):
        MilvusHybridRetriever(store).run(query="q", query_embedding=[float("nan")] * DIM)
    with pytest.raises(ValueError, match="got 2 queries but 1 query embeddings"):
        MilvusHybridBatchRetriever(store).run(queries=["a", "b"], query_embeddings=[[0.1] * DIM])
    assert MilvusBatchEmbeddingRetriever(store).run(query_embeddings=[])["documents"] == []
    assert MilvusBM25BatchRetriever(store).run(queries=[])["documents"] == []


def small_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A quarter of samples/python_docs.jsonl plus the modules the queries look for (embedding all takes ~45 s)."""
    path = tmp_path_factory.getbasetemp() / "milvus-python-docs.jsonl"
    if not path.exists():
        lines = SAMPLE.read_text(encoding="utf-8").splitlines()
        wanted = ('"argparse-', '"getopt-', '"zipfile-', '"threading-', '"_thread-')
        path.write_text(
            "".join(f"{line}\n" for i, line in enumerate(lines) if i % 4 == 0 or any(w in line for w in wanted)),
            encoding="utf-8",
        )
    return path


@pytest.fixture(scope="module")
def sample_index(milvus_module_uri: str, minilm_path: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """samples/python_docs.jsonl through pipelines/milvus_index.yaml (embeddings shared by both URI kinds)."""
    index = pf.load_template("milvus_index")
    pf.set_init_param(index, "embedder.model", minilm_path)
    pf.set_init_param(index, "embedder.progress_bar", False)
    embeddings = tmp_path_factory.getbasetemp() / "milvus-sample-embeddings.npy"  # the server run reuses it
    pf.set_init_param(index, "embedder.embedding_path", str(embeddings))
    pf.set_init_param(index, "writer.document_store.uri", milvus_module_uri)
    pf.set_init_param(index, "writer.document_store.collection_name", "python_docs")
    pipeline = pf.build(index)
    written = pipeline.run({"reader": {"path": str(small_sample(tmp_path_factory))}})["writer"]["documents_written"]
    assert written == len(small_sample(tmp_path_factory).read_text(encoding="utf-8").splitlines())
    pipeline.get_component("writer").document_store.close()
    return milvus_module_uri


def mix_pipeline(uri: str, minilm_path: str) -> dict[str, Any]:
    data = pf.load_template("milvus_mix_search")
    pf.set_init_param(data, "embedder.model", minilm_path)
    for side in ("dense", "bm25"):
        pf.set_init_param(data, f"{side}.document_store.uri", uri)
        pf.set_init_param(data, f"{side}.document_store.collection_name", "python_docs")
    return data


@pytest.mark.integration
def test_mix_search_pipeline_end_to_end(sample_index: str, minilm_path: str) -> None:
    data = mix_pipeline(sample_index, minilm_path)
    search = pf.QueryPipeline(data, "milvus_mix_search")
    corpus_size = search.pipeline.get_component("dense").document_store.count_documents()
    expected = {
        "how do I parse command line arguments": "argparse",
        "read and write zip archives": "zipfile",
        "run a function in a separate thread": "thread",
    }
    pipeline = search.pipeline
    for query, module in expected.items():
        outputs = pipeline.run(
            {"embedder": {"text": query}, "bm25": {"query": query}, "mix": {"query": query}},
            include_outputs_from={"dense", "bm25"},
        )
        fused = outputs["mix"]["documents"]
        assert len(fused) == 5
        assert any(module in (d.id or "") for d in fused[:3]), (query, ids(fused))
        dense, sparse = outputs["dense"]["documents"], outputs["bm25"]["documents"]
        assert {d.meta["retrieval_type"] for d in dense} == {"dense"}
        assert {d.meta["retrieval_type"] for d in sparse} == {"sparse"}
        assert len(dense) == min(100, corpus_size)
        assert sparse
        direct = MixRetrieveRanker(top_k=5).run(query=query, dense_documents=dense, sparse_documents=sparse)
        assert [(d.id, d.score) for d in direct["documents"]] == [(d.id, d.score) for d in fused]
    for name in ("dense", "bm25"):
        pipeline.get_component(name).document_store.close()


@pytest.mark.integration
def test_mix_search_yaml_names_the_token_variable_only(
    sample_index: str, minilm_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MILVUS_TOKEN", "root:very-secret-value")
    pipeline = pf.build(mix_pipeline(sample_index, minilm_path))
    text = pipeline.dumps()
    assert "very-secret-value" not in text
    stores = [
        c["init_parameters"]["document_store"]
        for c in yaml.safe_load(text)["components"].values()
        if "document_store" in c["init_parameters"]
    ]
    assert [s["init_parameters"]["token"]["env_vars"] for s in stores] == [["MILVUS_TOKEN"], ["MILVUS_TOKEN"]]
