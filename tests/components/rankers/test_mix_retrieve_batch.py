"""MixRetrieveBatchRanker fuses each query exactly as MixRetrieveRanker does, in one pipeline run."""

import pytest
from haystack import Document, Pipeline

from components.rankers import MixRetrieveRanker
from components.rankers.mix_retrieve_batch_ranker import MixRetrieveBatchRanker


def side(prefix: str, scores: list[float], tag: str) -> list[Document]:
    """A retriever's result list: ids prefix0, prefix1, ... with the given scores."""
    return [
        Document(id=f"{prefix}{i}", content=f"{prefix} {i}", score=s, meta={"retrieval_type": tag})
        for i, s in enumerate(scores)
    ]


QUERIES = ["short", "a much longer natural language question about retrieval"]
DENSE = [side("d", [0.9, 0.5, 0.1], "dense"), side("x", [0.8, 0.7], "dense")]
SPARSE = [side("d", [12.0, 3.0], "sparse")[::-1], side("y", [5.0, 1.0, 0.5], "sparse")]


def test_batch_equals_one_query_at_a_time() -> None:
    batch = MixRetrieveBatchRanker(top_k=3).run(queries=QUERIES, dense_documents=DENSE, sparse_documents=SPARSE)
    single = MixRetrieveRanker(top_k=3)
    for q, d, s, got in zip(QUERIES, DENSE, SPARSE, batch["documents"], strict=True):
        want = single.run(query=q, dense_documents=d, sparse_documents=s)["documents"]
        assert [(x.id, x.score) for x in got] == [(x.id, x.score) for x in want]
    assert len(batch["documents"][1]) == 3


def test_short_and_long_queries_get_different_dense_weights() -> None:
    ranker = MixRetrieveBatchRanker()
    assert ranker.dense_weight(QUERIES[0]) < 0.5 < ranker.dense_weight(QUERIES[1]) <= 0.7


def test_one_side_missing_is_fused_from_the_other() -> None:
    out = MixRetrieveBatchRanker(top_k=2).run(queries=QUERIES, sparse_documents=SPARSE)["documents"]
    assert [d.meta["retrieval_sources"] for d in out[1]] == [["sparse"], ["sparse"]]


def test_a_blank_query_is_named_by_position_even_without_documents() -> None:
    with pytest.raises(ValueError, match=r"queries\[1\] is empty; give at least one non-space character"):
        MixRetrieveBatchRanker().run(queries=["fine", " "])


def test_count_mismatch_names_the_socket() -> None:
    with pytest.raises(ValueError, match="dense_documents holds 1 result lists for 2 queries"):
        MixRetrieveBatchRanker().run(queries=QUERIES, dense_documents=DENSE[:1])


def test_bad_parameters_fail_at_init_like_the_single_ranker() -> None:
    with pytest.raises(ValueError, match="baseline \\+ amplitude"):
        MixRetrieveBatchRanker(baseline=0.8, amplitude=0.3)


def test_yaml_round_trip() -> None:
    pipeline = Pipeline()
    pipeline.add_component("mix", MixRetrieveBatchRanker(top_k=7, midpoint=10.0))
    again = Pipeline.loads(pipeline.dumps()).get_component("mix")
    assert isinstance(again, MixRetrieveBatchRanker)
    assert again.top_k == 7
    assert again.midpoint == 10.0
