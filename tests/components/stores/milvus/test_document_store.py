"""MilvusDocumentStore on Milvus Lite and on a real `milvus-lite server`: the same assertions against both URIs.

Writes, counts and filters (Haystack filters, ``id``/``content``/``meta.*``), duplicate policies, deletes, dense
search against exact inner products in numpy, BM25 and Milvus hybrid search, the text and id length limits,
serialisation, and data that outlives a closed store (Lite) or a restarted server.
"""

import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret
from haystack.utils.filters import document_matches_filter

from components.stores.milvus import MilvusDocumentStore
from tests.support import milvus as milvus_support
from tests.support.milvus import DIM, MilvusServer, assert_same_results, corpus, ids, is_server
from tests.support.paths import REPO

milvus_server = milvus_support.milvus_server
milvus_uri = milvus_support.milvus_uri
milvus_module_uri = milvus_support.milvus_module_uri
milvus_collection = milvus_support.milvus_collection


@pytest.fixture
def open_store(milvus_uri: str, milvus_collection: str) -> Any:
    """A factory of stores on this test's URI and collection, all closed at the end."""
    stores: list[MilvusDocumentStore] = []

    def make(**settings: Any) -> MilvusDocumentStore:
        store = MilvusDocumentStore(**{"uri": milvus_uri, "collection_name": milvus_collection, **settings})
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return corpus()


@pytest.fixture(scope="module")
def store(milvus_module_uri: str, docs: list[Document]) -> Iterator[MilvusDocumentStore]:
    """The corpus, written once per URI kind, for the tests that only read."""
    store = MilvusDocumentStore(uri=milvus_module_uri, collection_name="shared")
    assert store.write_documents(docs) == len(docs)
    yield store
    store.close()


@pytest.fixture
def written(open_store: Any, docs: list[Document]) -> MilvusDocumentStore:
    """The corpus in a collection of this test's own, for tests that change it."""
    store: MilvusDocumentStore = open_store()
    store.write_documents(docs)
    return store


def test_write_count_and_read_back(store: MilvusDocumentStore, docs: list[Document]) -> None:
    assert store.count_documents() == len(docs)
    stored = {document.id: document for document in store.filter_documents()}
    assert sorted(stored) == ids(docs)
    for document in docs:
        assert stored[document.id].content == document.content
        assert stored[document.id].meta == document.meta


FILTERS = [
    {"field": "meta.kind", "operator": "==", "value": "odd"},
    {"field": "meta.n", "operator": ">=", "value": 30},
    {"field": "meta.group", "operator": "in", "value": ["a", "c"]},
    {"field": "meta.group", "operator": "not in", "value": ["a"]},
    {"field": "meta.weight", "operator": "<", "value": 0.5},
    {"field": "id", "operator": "in", "value": ["d01", "d07", "d33", "missing"]},
    {"field": "id", "operator": "!=", "value": "d00"},
    {
        "operator": "AND",
        "conditions": [
            {"field": "meta.kind", "operator": "==", "value": "even"},
            {
                "operator": "OR",
                "conditions": [
                    {"field": "meta.group", "operator": "==", "value": "b"},
                    {"field": "meta.n", "operator": "<", "value": 7},
                ],
            },
        ],
    },
    {
        "operator": "NOT",
        "conditions": [
            {"field": "meta.kind", "operator": "==", "value": "odd"},
            {"field": "meta.n", "operator": ">", "value": 10},
        ],
    },
    {
        "operator": "OR",
        "conditions": [
            {"operator": "NOT", "conditions": [{"field": "meta.group", "operator": "!=", "value": "a"}]},
            {"field": "id", "operator": "==", "value": "d05"},
        ],
    },
    {"operator": "AND", "conditions": []},
    {"operator": "OR", "conditions": []},
    {"operator": "NOT", "conditions": [{"operator": "OR", "conditions": []}]},
    {
        "operator": "AND",
        "conditions": [{"operator": "OR", "conditions": []}, {"field": "id", "operator": "==", "value": "d01"}],
    },
]


@pytest.mark.parametrize("filters", FILTERS, ids=range(len(FILTERS)))
def test_filters_select_what_haystack_selects(
    store: MilvusDocumentStore, docs: list[Document], filters: dict[str, Any]
) -> None:
    expected = sorted(document.id for document in docs if document_matches_filter(filters, document))
    assert sorted(ids(store.filter_documents(filters))) == expected
    hits = store.embedding_search([docs[0].embedding], top_k=100, filters=filters)[0]
    assert sorted(ids(hits)) == expected


def test_filter_on_content(store: MilvusDocumentStore, docs: list[Document]) -> None:
    target = docs[3].content
    expected = sorted(document.id for document in docs if document.content == target)
    assert sorted(ids(store.filter_documents({"field": "content", "operator": "==", "value": target}))) == expected


def test_duplicate_policies(open_store: Any, docs: list[Document]) -> None:
    store = open_store()
    store.write_documents(docs[:5])
    changed = [Document(id=d.id, content="changed text", embedding=d.embedding, meta={"v": 2}) for d in docs[:3]]
    for policy in (DuplicatePolicy.NONE, DuplicatePolicy.FAIL):
        with pytest.raises(DuplicateDocumentError, match=r"ID 'd00' already exists in Milvus collection"):
            store.write_documents([docs[9], *changed], policy=policy)
    with pytest.raises(DuplicateDocumentError, match="'d09'"):
        store.write_documents([docs[9], docs[9]], policy=DuplicatePolicy.FAIL)
    assert store.count_documents() == 5  # a refused write writes nothing
    assert store.write_documents([*changed, docs[5]], policy=DuplicatePolicy.SKIP) == 1
    assert {d.id: d.content for d in store.filter_documents()} == {d.id: d.content for d in docs[:6]}
    assert store.write_documents(changed, policy=DuplicatePolicy.OVERWRITE) == 3
    stored = {d.id: d for d in store.filter_documents()}
    assert len(stored) == 6
    assert [stored[d.id].content for d in changed] == ["changed text"] * 3
    assert [stored[d.id].meta for d in changed] == [{"v": 2}] * 3
    assert stored["d03"].content == docs[3].content


def test_delete(written: MilvusDocumentStore, docs: list[Document]) -> None:
    store = written
    store.delete_documents(["d01", "d02", "not-there"])
    assert store.count_documents() == len(docs) - 2
    assert not {"d01", "d02"} & set(ids(store.filter_documents()))
    assert "d01" not in ids(store.embedding_search([docs[1].embedding], top_k=5)[0])
    store.delete_documents([])
    assert store.count_documents() == len(docs) - 2


def test_operations_by_id_and_filter(written: MilvusDocumentStore, docs: list[Document]) -> None:
    store, odd = written, {"field": "meta.kind", "operator": "==", "value": "odd"}
    expected = sorted(d.id for d in docs if document_matches_filter(odd, d))
    assert store.count_documents_by_filter(odd) == len(expected)
    assert sorted(ids(store.get_documents_by_id(["d01", "d02", "missing"]))) == ["d01", "d02"]
    assert store.update_by_filter(odd, {"tag": "x"}) == len(expected)
    tagged = store.filter_documents({"field": "meta.tag", "operator": "==", "value": "x"})
    assert sorted(ids(tagged)) == expected
    first = store.get_documents_by_id([expected[0]])[0]
    original = next(d for d in docs if d.id == expected[0])
    assert first.content == original.content  # content kept, meta merged
    assert first.meta == {**original.meta, "tag": "x"}
    assert ids(store.embedding_search([original.embedding], top_k=1)[0]) == [original.id]  # vector kept
    assert store.delete_by_filter(odd) == len(expected)
    assert store.count_documents() == len(docs) - len(expected)
    store.delete_all_documents()
    assert store.count_documents() == 0
    assert store.write_documents(docs[:2]) == 2  # the collection stays usable


async def test_async_twins_of_the_protocol(written: MilvusDocumentStore, docs: list[Document]) -> None:
    odd = {"field": "meta.kind", "operator": "==", "value": "odd"}
    count = await written.count_documents_by_filter_async(odd)
    assert count == sum(document_matches_filter(odd, d) for d in docs)
    assert ids(await written.get_documents_by_id_async(["d03"])) == ["d03"]
    await written.delete_all_documents_async()
    assert await written.count_documents_async() == 0


def test_dense_search_equals_exact_inner_product(store: MilvusDocumentStore, docs: list[Document]) -> None:
    vectors = np.array([d.embedding for d in docs], dtype=np.float32)
    queries = np.random.default_rng(1).standard_normal((5, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    results = store.embedding_search(queries.tolist(), top_k=7)
    exact = queries @ vectors.T
    for query_scores, hits in zip(exact, results, strict=True):
        order = np.argsort(-query_scores)[:7]
        assert ids(hits) == [docs[i].id for i in order]
        assert [h.score for h in hits] == pytest.approx(query_scores[order].tolist(), abs=1e-5)
        assert {h.meta["retrieval_type"] for h in hits} == {"dense"}
        assert all(h.embedding is None for h in hits)


def test_batch_results_equal_single_results(store: MilvusDocumentStore, docs: list[Document]) -> None:
    embeddings = [d.embedding for d in docs[:4]]
    queries = ["alpha river", "stone cloud omega", "beta", "sigma kappa lambda"]
    assert_same_results(store.embedding_search(embeddings, 6), [store.embedding_search([e], 6)[0] for e in embeddings])
    assert_same_results(store.bm25_search(queries, 6), [store.bm25_search([q], 6)[0] for q in queries])
    pairs = list(zip(queries, embeddings, strict=True))
    for ranker in ("rrf", "weighted"):
        batch = store.hybrid_search(queries, embeddings, 6, ranker=ranker)
        assert_same_results(batch, [store.hybrid_search([q], [e], 6, ranker=ranker)[0] for q, e in pairs])
    assert store.embedding_search([], 3) == []
    assert store.bm25_search([], 3) == []


def test_bm25_scores_and_order(open_store: Any, docs: list[Document]) -> None:
    store = open_store(index_chunk_size=7)  # several insert calls, then a flush
    extra = [
        Document(
            id="x1", content="the volcano erupted near the harbour", embedding=docs[0].embedding, meta={"kind": "x"}
        ),
        Document(id="x2", content="a quiet harbour town", embedding=docs[1].embedding, meta={"kind": "y"}),
    ]
    store.write_documents(docs + extra)
    hits = store.bm25_search(["volcano harbour"], top_k=5)[0]
    assert ids(hits)[:2] == ["x1", "x2"]  # both terms first, then one of them; no other document has either
    assert len(hits) == 2
    assert all(h.score > 0 for h in hits)
    assert hits[0].score > hits[1].score
    assert {h.meta["retrieval_type"] for h in hits} == {"sparse"}
    filtered = store.bm25_search(
        ["volcano harbour"], top_k=5, filters={"field": "meta.kind", "operator": "==", "value": "y"}
    )
    assert ids(filtered[0]) == ["x2"]
    several = store.bm25_search(["alpha beta"], top_k=10)[0]
    assert several
    assert [h.score for h in several] == sorted((h.score for h in several), reverse=True)
    assert all("alpha" in h.content.split() or "beta" in h.content.split() for h in several)


def test_hybrid_rrf_fuses_the_dense_and_bm25_rankings(store: MilvusDocumentStore, docs: list[Document]) -> None:
    query, embedding, k = "omega river stone", docs[4].embedding, 6
    dense = ids(store.embedding_search([embedding], k)[0])
    sparse = ids(store.bm25_search([query], k)[0])
    fused = store.hybrid_search([query], [embedding], k, ranker="rrf", rrf_k=60)[0]
    expected: dict[str, float] = {}
    for ranking in (dense, sparse):
        for rank, doc_id in enumerate(ranking, start=1):
            expected[doc_id] = expected.get(doc_id, 0.0) + 1 / (60 + rank)
    best = sorted(expected.values(), reverse=True)[:k]
    assert [h.score for h in fused] == pytest.approx(best, abs=1e-6)
    assert all(h.score == pytest.approx(expected[h.id], abs=1e-6) for h in fused)
    assert {h.meta["retrieval_type"] for h in fused} == {"hybrid"}


def test_hybrid_weighted_follows_the_weights(store: MilvusDocumentStore, docs: list[Document]) -> None:
    query, embedding, k = "omega river stone", docs[4].embedding, 6
    dense = ids(store.embedding_search([embedding], k)[0])
    sparse = ids(store.bm25_search([query], k)[0])
    only_dense = store.hybrid_search([query], [embedding], k, ranker="weighted", weights=(1.0, 0.0))[0]
    assert ids(only_dense) == dense
    only_bm25 = store.hybrid_search([query], [embedding], k, ranker="weighted", weights=(0.0, 1.0))[0]
    assert ids(only_bm25)[: len(sparse)] == sparse
    both = store.hybrid_search([query], [embedding], k, ranker="weighted", weights=(0.5, 0.5))[0]
    assert [h.score for h in both] == sorted((h.score for h in both), reverse=True)
    assert set(ids(both)) <= set(dense) | set(sparse)


def test_long_text_is_cut_at_a_character_boundary_with_a_warning(
    open_store: Any, docs: list[Document], caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(text_max_length=20)
    texts = {"ascii": "x" * 30, "multi": "é" * 15, "cjk": "ab" + "水" * 10, "short": "fits"}
    written = [Document(id=key, content=text, embedding=docs[0].embedding) for key, text in texts.items()]
    with caplog.at_level(logging.WARNING):
        store.write_documents(written)
    assert "3 document(s) longer than text_max_length=20 bytes were truncated" in caplog.text
    stored = {d.id: d.content for d in store.filter_documents()}
    assert stored == {"ascii": "x" * 20, "multi": "é" * 10, "cjk": "ab" + "水" * 6, "short": "fits"}
    assert all(len(text.encode("utf-8")) <= 20 for text in stored.values())


def test_id_over_id_max_length_is_an_error_and_writes_nothing(open_store: Any, docs: list[Document]) -> None:
    store = open_store(id_max_length=8)
    store.write_documents(docs[:2])
    bad = [docs[2], Document(id="é" * 5, content="x", embedding=docs[0].embedding)]
    with pytest.raises(
        ValueError, match=r"documents\[1\] \(id 'ééééé'\): the id is 10 bytes long, over id_max_length=8"
    ):
        store.write_documents(bad)
    assert sorted(ids(store.filter_documents())) == ["d00", "d01"]


def test_to_dict_from_dict_round_trip(open_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MILVUS_TOKEN", "root:very-secret-value")
    store = open_store(metric_type="COSINE", text_max_length=100, bm25_analyzer="standard", timeout=7.5)
    data = store.to_dict()
    params = data["init_parameters"]
    assert params["token"] == {"type": "env_var", "env_vars": ["MILVUS_TOKEN"], "strict": False}
    assert "very-secret-value" not in repr(data)
    assert params["metric_type"] == "COSINE"
    rebuilt = MilvusDocumentStore.from_dict(data)
    assert rebuilt.to_dict() == data
    assert isinstance(rebuilt.token, Secret)
    assert rebuilt._client is None  # no connection until first use


def test_data_outlives_a_closed_store_or_a_restarted_server(
    request: pytest.FixtureRequest, open_store: Any, milvus_uri: str, milvus_collection: str, docs: list[Document]
) -> None:
    store = open_store()
    store.write_documents(docs)
    query = docs[7].embedding
    before = (store.embedding_search([query], 5), store.bm25_search(["alpha river"], 5))
    if is_server(milvus_uri):
        server: MilvusServer = request.getfixturevalue("milvus_server")
        server.restart()  # every collection comes back released: the store loads it again by itself
        assert_same_results(store.embedding_search([query], 5), before[0])
        assert_same_results(store.bm25_search(["alpha river"], 5), before[1])
    else:
        store.close()  # releases Milvus Lite's lock: another process can open the database now
        script = (
            "import sys; from components.stores.milvus import MilvusDocumentStore as S; "
            "s = S(uri=sys.argv[1], collection_name=sys.argv[2]); "
            "print(s.count_documents(), s.embedding_search([[1.0] + [0.0] * 15], 1)[0][0].id)"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, milvus_uri, milvus_collection],
            check=False,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        best = int(np.argmax([d.embedding[0] for d in docs]))
        assert done.stdout.split() == [str(len(docs)), docs[best].id]
    reopened = open_store()
    assert reopened.count_documents() == len(docs)
    assert_same_results(reopened.embedding_search([query], 5), before[0])
    assert_same_results(reopened.bm25_search(["alpha river"], 5), before[1])


async def test_async_twins(written: MilvusDocumentStore, docs: list[Document]) -> None:
    store = written
    embedding, query = docs[2].embedding, "gamma delta"
    assert await store.count_documents_async() == len(docs)
    assert_same_results(await store.embedding_search_async([embedding], 4), store.embedding_search([embedding], 4))
    assert_same_results(await store.bm25_search_async([query], 4), store.bm25_search([query], 4))
    hybrid = await store.hybrid_search_async([query], [embedding], 4)
    assert_same_results(hybrid, store.hybrid_search([query], [embedding], 4))
    assert await store.write_documents_async([Document(id="new", content="n", embedding=embedding)]) == 1
    await store.delete_documents_async(["new"])
    assert len(await store.filter_documents_async()) == len(docs)
