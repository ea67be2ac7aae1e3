"""One bad input, one error: every store, retriever, embedder and ranker refuses the same bad ``top_k``, query or
filters with the same exception type and the same message (``components.checks``), before any model is loaded or
any request is sent. The expected message is what the shared check says about the value; each component must
repeat it word for word, so a component that checks on its own, later, or not at all fails here.
"""

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.errors import FilterError

from components.checks import check_filters, check_query, check_top_k
from components.embedders import SentenceTransformersBatchTextEmbedder, SentenceTransformersTextEmbedder
from components.rankers import LocalCrossEncoderRanker, MixRetrieveRanker, TEIRanker
from components.rankers.mix_retrieve_batch_ranker import MixRetrieveBatchRanker
from components.retrievers import (
    BM25BatchRetriever,
    BM25Retriever,
    FAISSBatchEmbeddingRetriever,
    FAISSEmbeddingRetriever,
)
from components.stores import BM25DocumentStore, FAISSDocumentStore

MIB = 1024 * 1024
DIM = 4
VECTOR = [0.5, 0.5, 0.5, 0.5]
NOT_A_MODEL = "/nonexistent/models/reranker"  # absolute, so init accepts it; loading it would fail
NOWHERE = "http://127.0.0.1:9/rerank"  # nothing listens: a request would fail, not a check

BAD_TOP_K = [0, -1, 10001, 1.5, "3", True, False, [3]]
BAD_QUERIES = ["", "   ", "\t\n", "x" * (MIB + 1), "\ud800", "ok \udfff", 5, None, b"query", ["query"]]
NOT_NESTED = {"field": "meta.topic", "operator": "==", "value": "a"}
BAD_FILTERS = [
    "x",
    ["not", "a", "dict"],
    {"field": "meta.topic"},
    {"field": "meta.topic", "operator": "~", "value": "a"},
    {"field": "meta.topic", "operator": "in", "value": "a"},
    {"field": 3, "operator": "==", "value": "a"},
    {"operator": "AND"},
    {"operator": "XOR", "conditions": []},
    {"operator": "OR", "conditions": [NOT_NESTED, {"field": "meta.topic", "value": "a"}]},
    {"operator": "NOT", "conditions": [NOT_NESTED, "x"]},
]


def _deep_filter(levels: int) -> dict[str, Any]:
    tree: dict[str, Any] = NOT_NESTED
    for _ in range(levels):
        tree = {"operator": "NOT", "conditions": [tree]}
    return tree


BAD_FILTERS.append(_deep_filter(150))


@pytest.fixture(scope="module")
def faiss_store() -> FAISSDocumentStore:
    store = FAISSDocumentStore()
    store.write_documents(
        [Document(id=f"f{i}", content=f"doc {i}", meta={"topic": "a"}, embedding=[float(i)] * DIM) for i in range(1, 4)]
    )
    return store


@pytest.fixture(scope="module")
def bm25_store() -> BM25DocumentStore:
    store = BM25DocumentStore()
    store.write_documents([Document(id=f"b{i}", content=f"volcano report {i}", meta={"topic": "a"}) for i in range(3)])
    return store


def docs() -> list[Document]:
    return [Document(id="a", content="a volcano", score=1.0, meta={"retrieval_type": "dense"})]


def message_of(action: Callable[[], Any], kind: type[Exception] = ValueError) -> str:
    """The message of the ``kind`` error that ``action`` raises (the test fails if it raises nothing)."""
    with pytest.raises(kind) as raised:
        action()
    return str(raised.value)


def top_k_callers(faiss_store: FAISSDocumentStore, bm25_store: BM25DocumentStore) -> dict[str, Callable[[Any], Any]]:
    """Every run-time place a ``top_k`` goes in, each called with a good query and documents."""
    return {
        "FAISSEmbeddingRetriever": lambda k: FAISSEmbeddingRetriever(faiss_store).run(query_embedding=VECTOR, top_k=k),
        "FAISSBatchEmbeddingRetriever": lambda k: FAISSBatchEmbeddingRetriever(faiss_store).run(
            query_embeddings=[VECTOR], top_k=k
        ),
        "FAISSDocumentStore.search": lambda k: faiss_store.search(np.array([VECTOR], dtype=np.float32), k),
        "BM25Retriever": lambda k: BM25Retriever(bm25_store).run(query="volcano", top_k=k),
        "BM25BatchRetriever": lambda k: BM25BatchRetriever(bm25_store).run(queries=["volcano"], top_k=k),
        "BM25DocumentStore.bm25_retrieval": lambda k: bm25_store.bm25_retrieval("volcano", top_k=k),
        "MixRetrieveRanker": lambda k: MixRetrieveRanker().run(query="volcano", documents=docs(), top_k=k),
        "MixRetrieveBatchRanker": lambda k: MixRetrieveBatchRanker().run(
            queries=["volcano"], dense_documents=[docs()], top_k=k
        ),
        "LocalCrossEncoderRanker": lambda k: LocalCrossEncoderRanker(NOT_A_MODEL).run(
            query="volcano", documents=docs(), top_k=k
        ),
        "TEIRanker": lambda k: TEIRanker(NOWHERE, max_retries=0).run(query="volcano", documents=docs(), top_k=k),
        "TEIRanker.run_async": lambda k: asyncio.run(
            TEIRanker(NOWHERE, max_retries=0).run_async(query="volcano", documents=docs(), top_k=k)
        ),
    }


def init_top_k_callers(faiss_store: FAISSDocumentStore, bm25_store: BM25DocumentStore) -> dict[str, Callable]:
    """Every component that takes a default ``top_k`` at init (where None is no default but a bad value)."""
    return {
        "FAISSEmbeddingRetriever": lambda k: FAISSEmbeddingRetriever(faiss_store, top_k=k),
        "FAISSBatchEmbeddingRetriever": lambda k: FAISSBatchEmbeddingRetriever(faiss_store, top_k=k),
        "BM25Retriever": lambda k: BM25Retriever(bm25_store, top_k=k),
        "BM25BatchRetriever": lambda k: BM25BatchRetriever(bm25_store, top_k=k),
        "MixRetrieveRanker": lambda k: MixRetrieveRanker(top_k=k),
        "MixRetrieveBatchRanker": lambda k: MixRetrieveBatchRanker(top_k=k),
        "LocalCrossEncoderRanker": lambda k: LocalCrossEncoderRanker(NOT_A_MODEL, top_k=k),
        "TEIRanker": lambda k: TEIRanker(NOWHERE, top_k=k),
    }


def query_callers(bm25_store: BM25DocumentStore) -> dict[str, Callable[[Any], Any]]:
    """Every place a single query goes in; the dense path's is the query embedder (the retriever sees a vector)."""
    return {
        "SentenceTransformersTextEmbedder": lambda q: SentenceTransformersTextEmbedder(model=NOT_A_MODEL).run(text=q),
        "BM25Retriever": lambda q: BM25Retriever(bm25_store).run(query=q),
        "BM25DocumentStore.bm25_retrieval": bm25_store.bm25_retrieval,
        "MixRetrieveRanker": lambda q: MixRetrieveRanker().run(query=q, documents=docs()),
        "MixRetrieveRanker (no documents)": lambda q: MixRetrieveRanker().run(query=q),
        "LocalCrossEncoderRanker": lambda q: LocalCrossEncoderRanker(NOT_A_MODEL).run(query=q, documents=docs()),
        "LocalCrossEncoderRanker.rerank": lambda q: LocalCrossEncoderRanker(NOT_A_MODEL).rerank(q, ["a volcano"]),
        "TEIRanker": lambda q: TEIRanker(NOWHERE, max_retries=0).run(query=q, documents=docs()),
        "TEIRanker (no documents)": lambda q: TEIRanker(NOWHERE).run(query=q, documents=[]),
        "TEIRanker.run_async": lambda q: asyncio.run(
            TEIRanker(NOWHERE, max_retries=0).run_async(query=q, documents=docs())
        ),
    }


def batch_callers(bm25_store: BM25DocumentStore) -> dict[str, Callable[[list], Any]]:
    """Every place a batch of queries goes in."""
    return {
        "SentenceTransformersBatchTextEmbedder": lambda qs: SentenceTransformersBatchTextEmbedder(
            model=NOT_A_MODEL
        ).run(texts=qs),
        "BM25BatchRetriever": lambda qs: BM25BatchRetriever(bm25_store).run(queries=qs),
        "BM25DocumentStore.bm25_retrieval_batch": bm25_store.bm25_retrieval_batch,
        "MixRetrieveBatchRanker": lambda qs: MixRetrieveBatchRanker().run(queries=qs),
    }


def filter_callers(faiss_store: FAISSDocumentStore, bm25_store: BM25DocumentStore) -> dict[str, Callable]:
    """Every place filters go in, at init and at run time."""
    return {
        "FAISSEmbeddingRetriever": lambda f: FAISSEmbeddingRetriever(faiss_store).run(
            query_embedding=VECTOR, filters=f
        ),
        "FAISSEmbeddingRetriever(init)": lambda f: FAISSEmbeddingRetriever(faiss_store, filters=f),
        "FAISSBatchEmbeddingRetriever": lambda f: FAISSBatchEmbeddingRetriever(faiss_store).run(
            query_embeddings=[VECTOR], filters=f
        ),
        "FAISSDocumentStore.search": lambda f: faiss_store.search(np.array([VECTOR], np.float32), 3, filters=f),
        "FAISSDocumentStore.filter_documents": faiss_store.filter_documents,
        "BM25Retriever": lambda f: BM25Retriever(bm25_store).run(query="volcano", filters=f),
        "BM25Retriever(init)": lambda f: BM25Retriever(bm25_store, filters=f),
        "BM25BatchRetriever": lambda f: BM25BatchRetriever(bm25_store).run(queries=["volcano"], filters=f),
        "BM25DocumentStore.bm25_retrieval": lambda f: bm25_store.bm25_retrieval("volcano", filters=f),
        "BM25DocumentStore.filter_documents": bm25_store.filter_documents,
    }


@pytest.mark.parametrize("top_k", BAD_TOP_K, ids=repr)
def test_a_bad_top_k_gets_one_message_everywhere(faiss_store, bm25_store, top_k) -> None:
    expected = message_of(lambda: check_top_k(top_k))
    callers = top_k_callers(faiss_store, bm25_store)
    got = {name: message_of(lambda call=call: call(top_k)) for name, call in callers.items()}
    assert got == dict.fromkeys(got, expected)


@pytest.mark.parametrize("top_k", [*BAD_TOP_K, None], ids=repr)
def test_a_bad_default_top_k_fails_at_init_with_the_same_message(faiss_store, bm25_store, top_k) -> None:
    expected = message_of(lambda: check_top_k(top_k))
    callers = init_top_k_callers(faiss_store, bm25_store)
    got = {name: message_of(lambda call=call: call(top_k)) for name, call in callers.items()}
    assert got == dict.fromkeys(got, expected)


@pytest.mark.parametrize("query", BAD_QUERIES, ids=lambda q: repr(q)[:20])
def test_a_bad_query_gets_one_message_in_every_mode(bm25_store, query) -> None:
    """Dense (the query embedder), BM25, hybrid (the mix ranker) and the rerankers: one rule, one message."""
    expected = message_of(lambda: check_query(query))
    got = {name: message_of(lambda call=call: call(query)) for name, call in query_callers(bm25_store).items()}
    assert got == dict.fromkeys(got, expected)


@pytest.mark.parametrize("query", BAD_QUERIES, ids=lambda q: repr(q)[:20])
def test_a_bad_query_in_a_batch_is_named_by_its_position_everywhere(bm25_store, query) -> None:
    expected = message_of(lambda: check_query(query, "queries[1]"))
    callers = batch_callers(bm25_store)
    got = {name: message_of(lambda call=call: call(["fine", query])) for name, call in callers.items()}
    assert got == dict.fromkeys(got, expected)


@pytest.mark.parametrize("batch", ["volcano", ("volcano",), None], ids=repr)
def test_a_batch_that_is_not_a_list_gets_one_message(bm25_store, batch) -> None:
    got = {name: message_of(lambda call=call: call(batch)) for name, call in batch_callers(bm25_store).items()}
    assert len(set(got.values())) == 1
    assert next(iter(got.values())).startswith("queries must be a list of strings")


@pytest.mark.parametrize("filters", BAD_FILTERS, ids=lambda f: repr(f)[:30])
def test_malformed_filters_get_one_filter_error_everywhere(faiss_store, bm25_store, filters) -> None:
    expected = message_of(lambda: check_filters(filters), FilterError)
    callers = filter_callers(faiss_store, bm25_store)
    got = {name: message_of(lambda call=call: call(filters), FilterError) for name, call in callers.items()}
    assert got == dict.fromkeys(got, expected)


def test_good_values_at_the_limits_pass_everywhere(faiss_store, bm25_store) -> None:
    """The limits are inclusive: top_k 1 and 10000, a 1 MiB query and a 100-level filter are answered."""
    assert len(BM25Retriever(bm25_store).run(query="volcano", top_k=10_000)["documents"]) == 3
    assert len(FAISSEmbeddingRetriever(faiss_store, top_k=1).run(query_embedding=VECTOR)["documents"]) == 1
    assert BM25Retriever(bm25_store).run(query="volcano " * (MIB // 8))["documents"]
    faiss = FAISSEmbeddingRetriever(faiss_store)
    assert len(faiss.run(query_embedding=VECTOR, filters=_deep_filter(99))["documents"]) == 0  # 100 levels: NOT x
    assert len(faiss.run(query_embedding=VECTOR, filters=_deep_filter(98))["documents"]) == 3  # NOT NOT x = x
    assert MixRetrieveRanker().run(query="v" * MIB, documents=docs())["documents"][0].id == "a"
