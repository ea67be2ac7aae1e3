"""Property: filtered retrieval from the FAISS and BM25 stores returns exactly the documents that Haystack's own
``document_matches_filter`` accepts, for random nested AND/OR/NOT trees over a few meta fields (some documents
lack some fields); a malformed tree is a FilterError from every retriever and store, never a crash or a guess.

Every document shares the word "common", so the BM25 query matches all of them and only the filter decides; the
FAISS retriever asks for every document, so only the filter decides there too.
"""

import copy
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.errors import FilterError
from haystack.utils.filters import document_matches_filter
from hypothesis import given, settings
from hypothesis import strategies as st

from components.retrievers import BM25Retriever, FAISSEmbeddingRetriever
from components.stores import BM25DocumentStore, FAISSDocumentStore

N_DOCS = 16
DIM = 4
YEARS = st.integers(1999, 2005)
SCORES = st.floats(-2.0, 2.0, allow_nan=False, width=32)
TOPICS = st.sampled_from(["a", "b", "c", "z"])
ORDERING = [">", ">=", "<", "<="]


def _documents() -> list[Document]:
    """Sixteen documents; fields go missing in a pattern so that every field is absent somewhere."""
    rng = np.random.default_rng(7)
    documents = []
    for i in range(N_DOCS):
        meta: dict[str, Any] = {}
        if i % 5:
            meta["year"] = 2000 + i % 5
        if i % 4:
            meta["topic"] = "abc"[i % 3]
        if i % 3:
            meta["score"] = round(float(rng.uniform(-1, 1)), 3)
        if i % 6:
            meta["flag"] = bool(i % 2)
        embedding = rng.standard_normal(DIM).tolist()
        documents.append(Document(id=f"d{i}", content=f"common word{i}", meta=meta, embedding=embedding))
    return documents


DOCUMENTS = _documents()


@pytest.fixture(scope="module")
def faiss_store() -> FAISSDocumentStore:
    store = FAISSDocumentStore()
    store.write_documents(DOCUMENTS)
    return store


@pytest.fixture(scope="module")
def bm25_store() -> BM25DocumentStore:
    store = BM25DocumentStore()
    store.write_documents([Document(id=d.id, content=d.content, meta=d.meta) for d in DOCUMENTS])
    return store


def _comparison(field: str, values: st.SearchStrategy, ordered: bool) -> st.SearchStrategy:
    """A comparison on ``meta.<field>``: equality (also with None), membership, and ordering where it is defined."""
    equality = st.builds(
        lambda op, v: {"field": f"meta.{field}", "operator": op, "value": v},
        st.sampled_from(["==", "!="]),
        st.one_of(values, values, values, st.none()),
    )
    membership = st.builds(
        lambda op, v: {"field": f"meta.{field}", "operator": op, "value": v},
        st.sampled_from(["in", "not in"]),
        st.lists(values, min_size=1, max_size=3) | st.just([]),
    )
    if not ordered:
        return equality | membership
    ordering = st.builds(
        lambda op, v: {"field": f"meta.{field}", "operator": op, "value": v}, st.sampled_from(ORDERING), values
    )
    return equality | membership | ordering


COMPARISONS = st.one_of(
    _comparison("year", YEARS, ordered=True),
    _comparison("score", SCORES, ordered=True),
    _comparison("topic", TOPICS, ordered=False),
    _comparison("flag", st.booleans(), ordered=False),
    _comparison("absent", YEARS, ordered=True),
    st.sampled_from([{"operator": op, "conditions": []} for op in ("AND", "OR", "NOT")]),  # all, none, none
)
TREES = st.recursive(
    COMPARISONS,
    lambda inner: st.builds(
        lambda op, conditions: {"operator": op, "conditions": conditions},
        st.sampled_from(["AND", "OR", "NOT"]),
        st.lists(inner, min_size=1, max_size=3),
    ),
    max_leaves=8,
)


def _expected(tree: dict[str, Any]) -> set[str]:
    """Brute force: the ids Haystack's reference filter accepts."""
    return {d.id for d in DOCUMENTS if document_matches_filter(tree, d)}


@settings(max_examples=150, deadline=None)
@given(TREES)
def test_filtered_retrieval_equals_brute_force_filtering(faiss_store, bm25_store, tree) -> None:
    expected = _expected(tree)
    query = DOCUMENTS[0].embedding
    dense = FAISSEmbeddingRetriever(faiss_store, top_k=N_DOCS).run(query_embedding=query, filters=tree)["documents"]
    sparse = BM25Retriever(bm25_store, top_k=N_DOCS).run(query="common", filters=tree)["documents"]
    assert {d.id for d in dense} == expected, "FAISS retriever"
    assert {d.id for d in sparse} == expected, "BM25 retriever"
    assert {d.id for d in faiss_store.filter_documents(tree)} == expected, "FAISS filter_documents"
    assert {d.id for d in bm25_store.filter_documents(tree)} == expected, "BM25 filter_documents"


def _nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of a tree, the root first."""
    nodes, stack = [], [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.get("conditions", []))
    return nodes


COMPARISON_DAMAGES = {
    "unknown operator": lambda node: node.update(operator="~="),
    "no value": lambda node: node.pop("value"),
    "no operator": lambda node: node.pop("operator"),
    "in with a scalar": lambda node: node.update(operator="in", value=3),
    "field not a string": lambda node: node.update(field=["meta.year"]),
}
LOGICAL_DAMAGES = {
    "unknown operator": lambda node: node.update(operator="XOR"),
    "conditions not a list": lambda node: node.update(conditions={"x": 1}),
    "a condition not a dict": lambda node: node.update(conditions=[*node["conditions"], "year"]),
    "no conditions": lambda node: node.pop("conditions"),
}


@st.composite
def malformed_trees(draw: st.DrawFn) -> dict[str, Any]:
    """A random valid tree with one node damaged in one of the ways that apply to its kind."""
    tree = copy.deepcopy(draw(TREES))
    node = draw(st.sampled_from(_nodes(tree)))
    damages = COMPARISON_DAMAGES if "field" in node else LOGICAL_DAMAGES
    damages[draw(st.sampled_from(sorted(damages)))](node)
    return tree


@settings(max_examples=60, deadline=None)
@given(malformed_trees())
def test_a_malformed_tree_is_a_filter_error_everywhere(faiss_store, bm25_store, tree) -> None:
    calls = {
        "FAISS retriever": lambda: FAISSEmbeddingRetriever(faiss_store).run(query_embedding=[0.1] * DIM, filters=tree),
        "BM25 retriever": lambda: BM25Retriever(bm25_store).run(query="common", filters=tree),
        "FAISS filter_documents": lambda: faiss_store.filter_documents(tree),
        "BM25 filter_documents": lambda: bm25_store.filter_documents(tree),
    }
    answered = []
    for name, call in calls.items():
        try:
            call()
        except FilterError:
            continue
        answered.append(name)
    assert not answered, f"answered a malformed filter instead of raising FilterError: {answered}"
