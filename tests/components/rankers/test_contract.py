"""The reranker contract every ranker shares: mxRAG's limits, ``rerank_top_k``, and the factory.

Limits are checked before any model is loaded or any request is sent: the rankers here point at a model
directory that does not exist and at a port where nothing listens, and still answer with the range error.
"""

import numpy as np
import pytest
from haystack import Document

from components.checks import MAX_QUERY_CHARS, MAX_TOP_K
from components.rankers import (
    LocalCrossEncoderRanker,
    MixRetrieveRanker,
    Reranker,
    TEIRanker,
    create_reranker,
)
from components.rankers.reranker_base import TEXT_MAX_CHARS, TEXTS_MAX_COUNT

MIB = 1024 * 1024


@pytest.fixture(params=["local", "tei"])
def ranker(request) -> Reranker:
    """A ranker whose backend is unreachable: only the argument checks can answer."""
    if request.param == "local":
        return LocalCrossEncoderRanker("/nonexistent/models/bge-reranker-base", top_k=2)
    return TEIRanker("http://127.0.0.1:9/rerank", top_k=2, max_retries=0)


def test_limits_are_mxrags():
    assert (MAX_QUERY_CHARS, MAX_TOP_K, TEXTS_MAX_COUNT, TEXT_MAX_CHARS) == (MIB, 10000, 1000 * 1000, MIB)


@pytest.mark.parametrize(
    ("query", "texts", "batch_size", "message"),
    [
        ("", ["a"], 32, "query is empty; give at least one non-space character"),
        ("q" * (MIB + 1), ["a"], 32, r"query is 1,048,577 characters long; the limit is 1,048,576 \(1 MiB\)"),
        (b"bytes", ["a"], 32, "query must be a string, got bytes"),
        ("q", [], 32, r"texts must hold \[1, 1000000\] items, got 0"),
        ("q", ["a", ""], 32, r"texts\[1\] length must be in \[1, 1048576\] characters, got 0"),
        ("q", ["a", "b", "t" * (MIB + 1)], 32, r"texts\[2\] length must be in \[1, 1048576\] characters, got 1048577"),
        ("q", ["a", None], 32, r"texts\[1\] must be a string, got NoneType"),
        ("q", ["a", "b\ud800"], 32, r"texts\[1\] is not valid Unicode: lone surrogate '\\ud800' at character 1"),
        ("q", "not a list", 32, "texts must be a list of strings, got str"),
        ("q", ["a"], 0, r"batch_size must be an integer in \[1, 1024\], got 0"),
        ("q", ["a"], 1025, r"batch_size must be an integer in \[1, 1024\], got 1025"),
        ("q", ["a"], 2.0, r"batch_size must be an integer in \[1, 1024\], got 2.0"),
    ],
)
def test_rerank_arguments_out_of_range_are_value_errors_stating_the_range(ranker, query, texts, batch_size, message):
    with pytest.raises(ValueError, match=message):
        ranker.rerank(query, texts, batch_size=batch_size)


def test_more_than_a_million_texts_are_refused(ranker):
    with pytest.raises(ValueError, match=r"texts must hold \[1, 1000000\] items, got 1000001"):
        ranker.rerank("q", ["a"] * (TEXTS_MAX_COUNT + 1))


def test_the_longest_allowed_query_and_text_pass_the_checks(ranker):
    """At the limits exactly, the checks pass and the (absent) backend is what fails."""
    with pytest.raises(Exception) as failed:  # noqa: PT011 (any backend failure will do; not a range error, below)
        ranker.rerank("q" * MIB, ["t" * MIB])
    assert "must be" not in str(failed.value)


@pytest.mark.parametrize("top_k", [0, 10001, -1, True, 5.0])
def test_top_k_out_of_range_is_refused_at_init_and_at_run(top_k):
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 10000\]"):
        TEIRanker("http://127.0.0.1:9/rerank", top_k=top_k)
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 10000\]"):
        TEIRanker("http://127.0.0.1:9/rerank").run(query="q", documents=[Document(content="a")], top_k=top_k)


def test_rerank_top_k_keeps_the_k_best_and_is_stable_on_ties(ranker):
    objs = ["a", "b", "c", "d", "e"]
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1])
    assert ranker.rerank_top_k(objs, scores) == ["b", "d"]
    ranker.top_k = 4
    assert ranker.rerank_top_k(objs, scores) == ["b", "d", "a", "c"]
    assert ranker.rerank_top_k(objs[:1], np.array([1.0])) == ["a"]


def test_rerank_top_k_refuses_bad_scores(ranker):
    with pytest.raises(ValueError, match="same length, got 3 and 2"):
        ranker.rerank_top_k(["a", "b", "c"], np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"1-D array, got shape \(1, 2\)"):
        ranker.rerank_top_k(["a", "b"], np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match=r"scores\[1\] is NaN"):
        ranker.rerank_top_k(["a", "b"], np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"objs must hold \[1, 1000000\] items, got 0"):
        ranker.rerank_top_k([], np.array([]))


def test_every_ranker_meets_the_protocol():
    rankers = [
        LocalCrossEncoderRanker("/nonexistent/model"),
        TEIRanker("http://127.0.0.1:9/rerank"),
        MixRetrieveRanker(),
    ]
    assert all(isinstance(r, Reranker) for r in rankers)


def test_factory_refuses_unknown_types_and_missing_or_unknown_arguments():
    with pytest.raises(
        ValueError,
        match=r"unknown similarity_type 'bm25'; expected one of \['local_reranker', 'mix_reranker', 'tei_reranker'\]",
    ):
        create_reranker("bm25")
    with pytest.raises(ValueError, match="similarity_type='local_reranker' needs model_path"):
        create_reranker("local_reranker", dev_id=0)
    with pytest.raises(ValueError, match="similarity_type='tei_reranker' needs url"):
        create_reranker("tei_reranker", k=3)
    with pytest.raises(ValueError, match="does not take model_path; accepted arguments"):
        create_reranker("mix_reranker", model_path="/models/x")
    with pytest.raises(ValueError, match=r"pass either k .* or top_k, not both"):
        create_reranker("mix_reranker", k=1, top_k=2)
    with pytest.raises(ValueError, match="client_param must be a dict with keys among"):
        create_reranker("tei_reranker", url="https://h/rerank", client_param={"pwd": "x"})
