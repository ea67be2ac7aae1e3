"""BM25Retriever and BM25BatchRetriever: scores, filters, batch == single, bad input, serialization, YAML."""

import asyncio
from pathlib import Path

import pytest
from haystack import Document, Pipeline
from haystack.document_stores.types import FilterPolicy
from haystack.errors import FilterError

from components.retrievers.bm25.batch_retriever import BM25BatchRetriever
from components.retrievers.bm25.retriever import BM25Retriever
from components.stores.bm25.document_store import BM25DocumentStore

TOPICS = ["volcano lava eruption", "glacier ice melting", "coral reef fish", "desert sand dunes"]


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    """Sixty documents over four topics, with a year and a topic number in their metadata."""
    return [
        Document(
            id=f"doc{i}",
            content=f"{TOPICS[i % 4]} report number {i} " + "volcano " * (i % 5),
            meta={"topic": i % 4, "year": 2000 + i % 7},
        )
        for i in range(60)
    ]


@pytest.fixture
def store(documents: list[Document]) -> BM25DocumentStore:
    """An in-memory store holding ``documents``."""
    store = BM25DocumentStore()
    store.write_documents(documents)
    return store


def test_hits_are_new_documents_with_scores_best_first_and_sparse_retrieval_type(store: BM25DocumentStore) -> None:
    """Scores descend, every hit says it is sparse, and the stored documents are left untouched."""
    hits = BM25Retriever(store, top_k=5).run(query="volcano eruption")["documents"]
    assert len(hits) == 5
    assert [d.score for d in hits] == sorted((d.score for d in hits), reverse=True)
    assert all(d.meta["retrieval_type"] == "sparse" for d in hits)
    assert all("retrieval_type" not in d.meta and d.score is None for d in store.filter_documents())


def test_only_documents_sharing_a_term_come_back(store: BM25DocumentStore) -> None:
    """Zero-score documents are never padded in: a rare term returns just its documents."""
    hits = BM25Retriever(store, top_k=50).run(query="glacier")["documents"]
    assert len(hits) == 15
    assert all("glacier" in d.content for d in hits)


@pytest.mark.parametrize("query", ["the and of is", "!!! ???"])
def test_stopword_or_punctuation_queries_return_nothing(store: BM25DocumentStore, query: str) -> None:
    """No terms left after tokenization means no hits, not an error."""
    assert BM25Retriever(store).run(query=query) == {"documents": []}
    assert BM25BatchRetriever(store).run(queries=[query, "glacier"])["documents"][0] == []


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_blank_queries_are_an_error_as_in_every_mode(store: BM25DocumentStore, query: str) -> None:
    """A blank query has no meaning in any mode; BM25 says so instead of answering [] (dense and hybrid agree)."""
    with pytest.raises(ValueError, match="query is empty; give at least one non-space character"):
        BM25Retriever(store).run(query=query)
    with pytest.raises(ValueError, match=r"queries\[1\] is empty"):
        BM25BatchRetriever(store).run(queries=["glacier", query])


def test_filters_are_exact_and_fill_top_k(store: BM25DocumentStore, documents: list[Document]) -> None:
    """With a filter, the hits are the best matching documents (by score; ties in any order), top_k of them."""
    flt = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.topic", "operator": "==", "value": 1},
            {"field": "meta.year", "operator": ">=", "value": 2003},
        ],
    }
    unfiltered = BM25Retriever(store, top_k=60).run(query="volcano ice")["documents"]
    allowed = {d.id for d in documents if d.meta["topic"] == 1 and d.meta["year"] >= 2003}
    expected_scores = [d.score for d in unfiltered if d.id in allowed][:4]
    hits = BM25Retriever(store, top_k=4).run(query="volcano ice", filters=flt)["documents"]
    assert len(hits) == 4
    assert {d.id for d in hits} <= allowed
    assert [d.score for d in hits] == expected_scores


def test_filter_policy_merge_combines_init_and_runtime_filters(store: BM25DocumentStore) -> None:
    """MERGE keeps the init filter and adds the runtime one; REPLACE drops the init filter."""
    topic = {"field": "meta.topic", "operator": "==", "value": 0}
    year = {"field": "meta.year", "operator": "==", "value": 2000}
    merging = BM25Retriever(store, filters=topic, top_k=60, filter_policy=FilterPolicy.MERGE)
    merged = merging.run("volcano", filters=year)
    replaced = BM25Retriever(store, filters=topic, top_k=60).run("volcano", filters=year)
    assert {(d.meta["topic"], d.meta["year"]) for d in merged["documents"]} == {(0, 2000)}
    assert {d.meta["topic"] for d in replaced["documents"]} == {0, 1, 2, 3}


def test_batch_equals_single(store: BM25DocumentStore) -> None:
    """Each batch result list is exactly what the single-query retriever returns for that query."""
    queries = ["volcano", "coral reef fish", "sand report 12", "the of", "glacier volcano ice"]
    flt = {"field": "meta.year", "operator": "<", "value": 2004}
    batch = BM25BatchRetriever(store, top_k=7, n_threads=2).run(queries=queries, filters=flt)["documents"]
    single = [BM25Retriever(store, top_k=7).run(query=q, filters=flt)["documents"] for q in queries]
    assert [[(d.id, d.score) for d in hits] for hits in batch] == [[(d.id, d.score) for d in hits] for hits in single]


def test_run_async_matches_run(store: BM25DocumentStore) -> None:
    """The async twins return what run returns."""
    single, batch = BM25Retriever(store, top_k=3), BM25BatchRetriever(store, top_k=3)
    assert asyncio.run(single.run_async(query="coral reef")) == single.run(query="coral reef")
    assert asyncio.run(batch.run_async(queries=["coral", "ice"])) == batch.run(queries=["coral", "ice"])


def test_a_query_over_one_mebibyte_is_refused_with_the_limit(store: BM25DocumentStore) -> None:
    """1,048,576 characters pass; one more is refused with the limit in the message (and its position in a batch)."""
    assert BM25Retriever(store).run(query="volcano " * 131072)["documents"]
    too_long = "x" * 1_048_577
    limit = r"query is 1,048,577 characters long; the limit is 1,048,576 \(1 MiB\)"
    with pytest.raises(ValueError, match=limit):
        BM25Retriever(store).run(query=too_long)
    with pytest.raises(ValueError, match=r"queries\[1\] is 1,048,577 characters long; the limit is 1,048,576"):
        BM25BatchRetriever(store).run(queries=["ok", too_long])


@pytest.mark.parametrize("retriever_class", [BM25Retriever, BM25BatchRetriever])
def test_top_k_below_one_is_refused_at_init_and_run(store: BM25DocumentStore, retriever_class) -> None:
    """top_k must be an integer in [1, 10000], both when configured and when given per call."""
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 10000\], got 0"):
        retriever_class(store, top_k=0)
    retriever = retriever_class(store)
    query = {"query": "volcano"} if retriever_class is BM25Retriever else {"queries": ["volcano"]}
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 10000\], got -3"):
        retriever.run(**query, top_k=-3)


def test_other_bad_inputs_are_refused(store: BM25DocumentStore) -> None:
    """A wrong store type, a non-string query, a non-list batch and a bad n_threads get clear errors."""
    with pytest.raises(TypeError, match="document_store must be a BM25DocumentStore, got dict"):
        BM25Retriever({})
    with pytest.raises(ValueError, match="query must be a string, got int"):
        BM25Retriever(store).run(query=42)
    with pytest.raises(ValueError, match="queries must be a list of strings, got str"):
        BM25BatchRetriever(store).run(queries="volcano")
    with pytest.raises(ValueError, match="n_threads must be an integer >= -1"):
        BM25BatchRetriever(store, n_threads=-2)
    with pytest.raises(FilterError, match=r"filters: comparison on 'meta\.topic' has no 'operator'"):
        BM25Retriever(store).run(query="volcano", filters={"field": "meta.topic", "value": 1})


def test_bm25_plus_does_not_return_documents_without_a_query_term() -> None:
    """BM25+ gives every document a floor score; documents sharing no term are still not hits."""
    store = BM25DocumentStore(method="bm25+")
    store.write_documents([Document(id="a", content="apple pie"), Document(id="b", content="banana split")])
    assert [d.id for d in BM25Retriever(store).run(query="apple tart")["documents"]] == ["a"]


@pytest.mark.parametrize("retriever_class", [BM25Retriever, BM25BatchRetriever])
def test_to_dict_from_dict_round_trip(tmp_path: Path, retriever_class) -> None:
    """Retriever and store settings survive serialization."""
    retriever = retriever_class(
        BM25DocumentStore(path=str(tmp_path), lang="zh"),
        filters={"field": "meta.a", "operator": "==", "value": 1},
        top_k=3,
        filter_policy=FilterPolicy.MERGE,
    )
    data = retriever.to_dict()
    assert data["init_parameters"]["document_store"]["init_parameters"]["lang"] == "zh"
    assert data["init_parameters"]["filter_policy"] == "merge"
    assert retriever_class.from_dict(data).to_dict() == data


def test_yaml_pipelines_round_trip_and_search_the_saved_index(tmp_path: Path, documents: list[Document]) -> None:
    """Both retrievers go through Pipeline.dumps/loads and then search the index saved at the store's path."""
    path = str(tmp_path / "bm25")
    BM25DocumentStore(path=path).write_documents(documents)
    pipeline = Pipeline()
    pipeline.add_component("single", BM25Retriever(BM25DocumentStore(path=path), top_k=3))
    pipeline.add_component("batch", BM25BatchRetriever(BM25DocumentStore(path=path), top_k=3))
    loaded = Pipeline.loads(pipeline.dumps())
    assert loaded.dumps() == pipeline.dumps()
    result = loaded.run({"single": {"query": "coral reef"}, "batch": {"queries": ["coral reef", "desert"]}})
    expected = pipeline.run({"single": {"query": "coral reef"}, "batch": {"queries": ["coral reef", "desert"]}})
    assert result == expected
    assert [d.meta["topic"] for d in result["single"]["documents"]] == [2, 2, 2]


@pytest.mark.integration
def test_numba_backend_returns_what_numpy_returns(documents: list[Document]) -> None:
    """The numba scorer (serial and parallel, with and without a mask) ranks like the numpy one; ~30 s of JIT."""
    numpy_store, numba_store = BM25DocumentStore(), BM25DocumentStore(backend="numba")
    for store in (numpy_store, numba_store):
        store.write_documents(documents)
    BM25BatchRetriever(numba_store, n_threads=2).warm_up()
    numba_store.warm_up()
    numpy_store.warm_up()
    for store in (numpy_store, numba_store):  # after the build, so the deletion is a mask in both
        store.delete_documents(["doc3"])
    queries = ["volcano lava", "coral reef", "glacier desert sand", "report 17"]
    for flt in (None, {"field": "meta.year", "operator": ">", "value": 2002}):
        expected = BM25BatchRetriever(numpy_store, top_k=6, n_threads=0).run(queries=queries, filters=flt)["documents"]
        for n_threads in (0, 2):
            got = BM25BatchRetriever(numba_store, top_k=6, n_threads=n_threads).run(queries=queries, filters=flt)
            assert [[pytest.approx(d.score, rel=1e-6) for d in hits] for hits in got["documents"]] == [
                [d.score for d in hits] for hits in expected
            ]
            assert all(d.id != "doc3" for hits in got["documents"] for d in hits)
