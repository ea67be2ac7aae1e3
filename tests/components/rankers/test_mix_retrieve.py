"""MixRetrieveRanker: mxRAG's query-length-adaptive fusion, checked against numbers computed by hand."""

import math
import re

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

import components  # noqa: F401 - registers our modules with Haystack's deserialization allowlist
from components.rankers import MixRetrieveRanker, create_reranker

# Hand-computed: sigmoid(3 - 6) = 1 / (1 + e^3) = 0.04742587317756678, so for a 3-character query
# w = 0.4 + 0.3 * 0.04742587317756678 = 0.41422776195327003 (dense) and 1 - w = 0.58577223804672997 (sparse).
W_SHORT = 0.41422776195327003


def corpus() -> dict[str, Document]:
    """Passage a is found by both sides; b and d by dense only; c by sparse only."""
    return {name: Document(id=name, content=f"passage {name}") for name in "abcd"}


def tagged(doc: Document, side: str, score: float) -> Document:
    return Document(id=doc.id, content=doc.content, meta={"retrieval_type": side, "source": "test"}, score=score)


def mixed_input() -> list[Document]:
    docs = corpus()
    dense = [tagged(docs["a"], "dense", 0.9), tagged(docs["b"], "dense", 0.5), tagged(docs["d"], "dense", 0.1)]
    sparse = [tagged(docs["c"], "sparse", 12.0), tagged(docs["a"], "sparse", 4.0)]
    return dense + sparse


def test_dense_weight_follows_the_sigmoid_of_query_length():
    ranker = MixRetrieveRanker()
    assert ranker.dense_weight("abc") == pytest.approx(W_SHORT, abs=1e-12)
    assert ranker.dense_weight("abcdef") == pytest.approx(0.55, abs=1e-12)  # at the midpoint: baseline + amplitude/2
    assert ranker.dense_weight("x" * 60) == pytest.approx(0.7, abs=1e-12)


def test_short_query_fusion_matches_hand_computed_scores():
    # Normalised: dense a=1, b=0.5, d=0; sparse c=1, a=0. Fused: a = w*1 + (1-w)*0, b = 0.5w, c = 1-w, d = 0.
    out = MixRetrieveRanker().run(query="abc", documents=mixed_input())["documents"]
    assert [d.id for d in out] == ["c", "a", "b", "d"]
    expected = [1 - W_SHORT, W_SHORT, 0.5 * W_SHORT, 0.0]
    np.testing.assert_allclose([d.score for d in out], expected, atol=1e-12)


def test_long_query_leans_on_the_dense_side():
    out = MixRetrieveRanker().run(query="what makes passage a relevant here?", documents=mixed_input())["documents"]
    assert [d.id for d in out] == ["a", "b", "c", "d"]
    np.testing.assert_allclose([d.score for d in out], [0.7, 0.35, 0.3, 0.0], atol=1e-9)


def test_a_passage_found_by_both_sides_is_merged_once_with_both_raw_scores():
    out = MixRetrieveRanker().run(query="abc", documents=mixed_input())["documents"]
    assert len(out) == 4
    a = next(d for d in out if d.id == "a")
    assert a.meta["retrieval_sources"] == ["dense", "sparse"]
    assert (a.meta["dense_score"], a.meta["sparse_score"]) == (0.9, 4.0)
    assert "retrieval_type" not in a.meta
    assert a.meta["source"] == "test"
    c = next(d for d in out if d.id == "c")
    assert c.meta["retrieval_sources"] == ["sparse"]
    assert "dense_score" not in c.meta


def test_equal_scores_on_one_side_normalise_to_zero():
    docs = corpus()
    inputs = [tagged(docs["a"], "dense", 0.7), tagged(docs["b"], "dense", 0.7), tagged(docs["c"], "sparse", 3.0)]
    out = MixRetrieveRanker().run(query="abc", documents=inputs)["documents"]
    assert {d.id: d.score for d in out} == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert [d.id for d in out] == ["a", "b", "c"], "ties keep input order"


def test_two_sockets_wire_without_a_joiner_and_match_the_tagged_list():
    docs = corpus()
    dense = [
        Document(id=d.id, content=d.content, score=s)
        for d, s in zip([docs["a"], docs["b"], docs["d"]], [0.9, 0.5, 0.1], strict=True)
    ]
    sparse = [
        Document(id=d.id, content=d.content, score=s) for d, s in zip([docs["c"], docs["a"]], [12.0, 4.0], strict=True)
    ]
    by_socket = MixRetrieveRanker().run(query="abc", dense_documents=dense, sparse_documents=sparse)["documents"]
    by_tag = MixRetrieveRanker().run(query="abc", documents=mixed_input())["documents"]
    assert [(d.id, d.score) for d in by_socket] == [(d.id, d.score) for d in by_tag]


def test_no_overflow_for_extreme_query_lengths():
    with pytest.raises(OverflowError):
        math.exp(1e6)  # what mxRAG's plain 1 / (1 + exp(-x)) computes for a very negative x
    far_midpoint = MixRetrieveRanker(midpoint=1e6, slope=5.0)
    assert far_midpoint.dense_weight("a") == 0.4
    huge_query = "x" * (1024 * 1024)
    assert MixRetrieveRanker(slope=1e300).dense_weight(huge_query) == pytest.approx(0.7)
    assert MixRetrieveRanker().run(query=huge_query, documents=mixed_input())["documents"][0].id == "a"


@pytest.mark.parametrize("extreme", [1e308, 1.7976931348623157e308])
def test_extreme_finite_scores_normalise_to_the_ends_not_nan(extreme):
    """Scores of ±1e308 overflowed max - min to inf and came out NaN; now they scale to 1, 0.5 and 0 like any."""
    docs = corpus()
    dense = [tagged(docs["a"], "dense", extreme), tagged(docs["b"], "dense", 0.0), tagged(docs["d"], "dense", -extreme)]
    sparse = [tagged(docs["c"], "sparse", -extreme), tagged(docs["a"], "sparse", extreme)]
    out = MixRetrieveRanker().run(query="abc", documents=dense + sparse)["documents"]
    assert [d.id for d in out] == ["a", "b", "d", "c"]
    np.testing.assert_allclose([d.score for d in out], [1.0, 0.5 * W_SHORT, 0.0, 0.0], atol=1e-12)
    assert out[0].meta["dense_score"] == extreme


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("socket", ["dense_documents", "sparse_documents"])
def test_infinite_or_nan_scores_are_errors_naming_the_document(socket, bad):
    """A min-max scale has no room for an infinite end: the broken retriever's document is named, nothing ranked."""
    given = [Document(id="a", content="x", score=1.0), Document(id="b", content="y", score=bad)]
    with pytest.raises(ValueError, match=re.escape(f"{socket}[1] (id=b) has score {bad!r}; fusion needs a finite")):
        MixRetrieveRanker().run(query="abc", **{socket: given})


@pytest.mark.parametrize("query", ["", "  \n", "a\ud800"])
def test_a_blank_or_broken_query_is_an_error_even_without_documents(query):
    with pytest.raises(ValueError, match=r"query is (empty|not valid Unicode)"):
        MixRetrieveRanker().run(query=query)


@pytest.mark.parametrize("meta", [{}, {"retrieval_type": "hybrid"}])
def test_missing_or_unknown_retrieval_type_is_an_error_naming_the_document(meta):
    docs = [*mixed_input(), Document(id="odd", content="odd one", meta=meta, score=1.0)]
    expected = f'documents[5] (id=odd) has meta["retrieval_type"]={meta.get("retrieval_type")!r}'
    with pytest.raises(ValueError, match=re.escape(expected)):
        MixRetrieveRanker().run(query="abc", documents=docs)


def test_a_document_tagged_for_the_other_side_on_a_socket_is_an_error():
    with pytest.raises(
        ValueError, match=r"dense_documents\[0\] \(id=a\).*'sparse' but came in through dense_documents"
    ):
        MixRetrieveRanker().run(query="abc", dense_documents=[tagged(corpus()["a"], "sparse", 1.0)])


def test_a_document_without_score_is_an_error():
    with pytest.raises(ValueError, match=r"sparse_documents\[0\] \(id=a\) has score None"):
        MixRetrieveRanker().run(query="abc", sparse_documents=[Document(id="a", content="x")])


def test_rerank_gives_fused_scores_in_input_order_and_rerank_top_k_keeps_the_best():
    ranker = MixRetrieveRanker(top_k=2)
    inputs = mixed_input()
    scores = ranker.rerank("abc", inputs)
    np.testing.assert_allclose(scores, [W_SHORT, 0.5 * W_SHORT, 0.0, 1 - W_SHORT, W_SHORT], atol=1e-12)
    assert [d.id for d in ranker.rerank_top_k(inputs, scores)] == ["c", "a"]


def test_top_k_and_empty_input():
    ranker = MixRetrieveRanker()
    assert len(ranker.run(query="abc", documents=mixed_input(), top_k=2)["documents"]) == 2
    assert ranker.run(query="abc")["documents"] == []
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 10000\]"):
        ranker.run(query="abc", documents=mixed_input(), top_k=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"baseline": -0.1}, r"baseline must be a finite number in \[0.0, 1.0\]"),
        ({"amplitude": 1.5}, r"amplitude must be a finite number in \[0.0, 1.0\]"),
        ({"slope": 0}, r"slope must be a finite number in \(0.0, inf\]"),
        ({"midpoint": -1}, r"midpoint must be a finite number in \(0.0, inf\]"),
        ({"slope": float("nan")}, "slope must be a finite number"),
        ({"baseline": True}, "baseline must be a finite number"),
        ({"baseline": 0.8, "amplitude": 0.3}, "baseline \\+ amplitude must be <= 1"),
        ({"top_k": 10001}, r"top_k must be an integer in \[1, 10000\]"),
    ],
)
def test_bad_parameters_are_refused_naming_the_range(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MixRetrieveRanker(**kwargs)


def test_factory_accepts_mxrag_arguments():
    ranker = create_reranker("mix_reranker", k=7, baseline=0.2, amplitude=0.5, slope=2, midpoint=10)
    assert isinstance(ranker, MixRetrieveRanker)
    assert (ranker.top_k, ranker.baseline, ranker.amplitude, ranker.slope, ranker.midpoint) == (7, 0.2, 0.5, 2.0, 10.0)


STORE_DOCS = [
    Document(id="cats", content="cats purr when they are content", embedding=[1.0, 0.0, 0.0]),
    Document(id="dogs", content="dogs bark at strangers", embedding=[0.0, 1.0, 0.0]),
    Document(id="birds", content="birds sing in the morning", embedding=[0.7, 0.0, 0.7]),
]
HYBRID_INPUTS = {
    "bm25": {"query": "dogs bark"},
    "dense": {"query_embedding": [0.9, 0.1, 0.3]},
    "mix": {"query": "dogs bark"},
}


def fill_stores(pipeline: Pipeline) -> Pipeline:
    """In-memory stores serialise without their documents: (re)write them into each retriever's store."""
    for name in ("bm25", "dense"):
        pipeline.get_component(name).document_store.write_documents(STORE_DOCS, policy=DuplicatePolicy.OVERWRITE)
    return pipeline


def hybrid_pipeline() -> Pipeline:
    """A BM25 retriever and an embedding retriever wired straight into the mix ranker (no joiner)."""
    store = InMemoryDocumentStore()
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(store, top_k=3))
    pipeline.add_component("dense", InMemoryEmbeddingRetriever(store, top_k=3))
    pipeline.add_component("mix", MixRetrieveRanker(top_k=3))
    pipeline.connect("bm25.documents", "mix.sparse_documents")
    pipeline.connect("dense.documents", "mix.dense_documents")
    return fill_stores(pipeline)


def test_hybrid_pipeline_runs_and_survives_a_yaml_round_trip():
    pipeline = hybrid_pipeline()
    result = pipeline.run(HYBRID_INPUTS, include_outputs_from={"bm25", "dense"})
    out = result["mix"]["documents"]
    direct = MixRetrieveRanker(top_k=3).run(
        query="dogs bark", dense_documents=result["dense"]["documents"], sparse_documents=result["bm25"]["documents"]
    )["documents"]
    assert [(d.id, d.score) for d in out] == [(d.id, d.score) for d in direct]
    assert {d.id: d.meta["retrieval_sources"] for d in out}["dogs"] == ["dense", "sparse"]
    loaded = fill_stores(Pipeline.loads(pipeline.dumps()))
    assert loaded.get_component("mix").to_dict() == pipeline.get_component("mix").to_dict()
    assert [(d.id, d.score) for d in loaded.run(HYBRID_INPUTS)["mix"]["documents"]] == [(d.id, d.score) for d in out]


def test_to_dict_from_dict_round_trip():
    ranker = MixRetrieveRanker(top_k=5, baseline=0.3, amplitude=0.6, slope=0.5, midpoint=12)
    data = ranker.to_dict()
    assert data == {
        "type": "components.rankers.mix_retrieve_ranker.MixRetrieveRanker",
        "init_parameters": {
            "top_k": 5,
            "baseline": 0.3,
            "amplitude": 0.6,
            "slope": 0.5,
            "midpoint": 12.0,
            "score_threshold": None,
        },
    }
    assert MixRetrieveRanker.from_dict(data).to_dict() == data
