"""Property: the tuner's offline mix (``needle_retrieval.tune.fit``, numpy over every query) scores and ranks every
candidate exactly as the mix ranker a hybrid search runs, bit for bit, for any hits and any curve of its grid.

No model and no index: the hits are drawn, the ranker is real, so a change to either side of the shared fusion
(``components.rankers.mix_fusion``) that makes `needle tune` fit something other than what a search runs fails here.
"""

from dataclasses import asdict

from haystack import Document
from hypothesis import given, settings
from hypothesis import strategies as st

from components.rankers.mix_retrieve_batch_ranker import MixRetrieveBatchRanker
from needle_retrieval.pipelines.fusion import Mix
from needle_retrieval.tune import fit

IDS = st.sampled_from("abcdefgh")
SCORES = st.sampled_from([0.0, 1.0, 2.0, -3.5]) | st.floats(-1e308, 1e308)
GRID = fit.mix_grid()
QUERIES = st.text("ab ", min_size=1, max_size=120).filter(str.strip)  # lengths on both sides of every midpoint


@st.composite
def hits(draw: st.DrawFn) -> list[Document]:
    """One side's hits of one query, best first as a retriever gives them; ids may repeat and scores tie."""
    drawn = draw(st.lists(st.tuples(IDS, SCORES), max_size=8))
    ordered = sorted(drawn, key=lambda hit: -hit[1])
    return [Document(id=doc_id, content=f"text {doc_id}", score=score) for doc_id, score in ordered]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(QUERIES, hits(), hits()), min_size=1, max_size=4),
    st.sampled_from(GRID),
)
def test_the_offline_mix_scores_and_ranks_as_the_ranker(
    cases: list[tuple[str, list[Document], list[Document]]], mix: Mix
) -> None:
    queries = [query for query, _, _ in cases]
    dense, sparse = [d for _, d, _ in cases], [s for _, _, s in cases]
    ranker = MixRetrieveBatchRanker(top_k=10000, **asdict(mix))
    answers = ranker.run(queries=queries, dense_documents=dense, sparse_documents=sparse)["documents"]

    matrices = fit.candidate_matrices(queries, dense, sparse, [{} for _ in queries])
    scores = fit.mix_scores(matrices, mix)
    offline = [dict(zip(ids, scores[row, : len(ids)].tolist(), strict=True)) for row, ids in enumerate(matrices.ids)]
    assert offline == [{doc.id: doc.score for doc in answer} for answer in answers]
    assert fit.rankings(matrices, scores, 10000) == [[doc.id for doc in answer] for answer in answers]
