"""Property: for any query -- arbitrary text with lone surrogates, whitespace of every kind, past 1 MiB, or not
text at all -- every mode either answers with at most ``top_k`` documents sorted by score, or raises the
ValueError that ``components.checks`` gives for that query; never another exception, never a silent ``[]``
for a blank query.

The components are real: MiniLM query embedder + FAISS store (dense), a bm25s store (BM25, single and batch),
the mix ranker over both (hybrid) and a local cross-encoder built from MiniLM with a random head. A good query of
exactly 1 MiB is left to test_checks_consistency.py: tokenising it in every mode would take seconds per example.
"""

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from haystack import Document
from haystack.components.joiners import DocumentJoiner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.checks import check_query
from components.embedders import SentenceTransformersDocumentEmbedder, SentenceTransformersTextEmbedder
from components.joiners.mix_batch_joiner import MixBatchJoiner
from components.joiners.rrf_batch_joiner import RRFBatchJoiner
from components.rankers import LocalCrossEncoderRanker, MixRetrieveRanker
from components.rankers.mix_retrieve_batch_ranker import MixRetrieveBatchRanker
from components.retrievers import BM25BatchRetriever, BM25Retriever, FAISSEmbeddingRetriever
from components.retrievers.candidates import Candidates, Side
from components.stores import BM25DocumentStore, FAISSDocumentStore
from tests.components.rankers.test_local_cross_encoder import minilm_cross_encoder  # noqa: F401  (a session fixture: the tiny cross-encoder)

MIB = 1024 * 1024
PASSAGES = [
    "Volcanoes erupt when magma rises through the crust.",
    "Coral reefs bleach when the sea gets too warm.",
    "Glaciers carve valleys as they move downhill.",
    "The stock market fell after the interest rate rose.",
    "Tea contains caffeine and antioxidants.",
    "火山喷发时岩浆从地壳中上升。",
]
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())
SPACES = st.text(st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\u00a0\u2003\u3000"), max_size=6)
QUERIES = st.one_of(
    st.text(ANY_CHAR, max_size=40),
    st.text(st.sampled_from("volcano coral glacier tea the of 火山 "), min_size=1, max_size=40),
    SPACES,
    st.sampled_from(["x" * (MIB + 1), "\ud800", "tea \udfff", "\x00", "volcano " * 300]),
    st.integers() | st.none() | st.binary(max_size=4) | st.lists(st.text(max_size=4), max_size=2),
)

Answer = Callable[[Any, int], list[Document]]


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """One torch thread while this module runs: on a small shared machine, spinning threads make each tiny
    forward pass take a second instead of milliseconds. The previous setting comes back afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def modes(minilm_path: str, minilm_cross_encoder: str, one_torch_thread: None) -> dict[str, Answer]:  # noqa: F811
    """Each mode as ``answer(query, top_k) -> documents``, over stores of the same six passages."""
    embedder = SentenceTransformersTextEmbedder(model=minilm_path, progress_bar=False)
    embedder.warm_up()
    documents = [Document(id=f"p{i}", content=text) for i, text in enumerate(PASSAGES)]
    passage_embedder = SentenceTransformersDocumentEmbedder(model=minilm_path, progress_bar=False)
    faiss_store = FAISSDocumentStore(metric="cosine")
    faiss_store.write_documents(passage_embedder.run(documents=documents)["documents"])
    bm25_store = BM25DocumentStore()
    bm25_store.write_documents(documents)
    dense, sparse = FAISSEmbeddingRetriever(faiss_store), BM25Retriever(bm25_store)
    ranker = LocalCrossEncoderRanker(minilm_cross_encoder, use_fp16=False)
    ranker.warm_up()

    def dense_answer(query: Any, k: int) -> list[Document]:
        return dense.run(query_embedding=embedder.run(text=query)["embedding"], top_k=k)["documents"]

    def hybrid_answer(query: Any, k: int) -> list[Document]:
        embedding = embedder.run(text=query)["embedding"]
        return MixRetrieveRanker(top_k=k).run(
            query=query,
            dense_documents=dense.run(query_embedding=embedding, top_k=k)["documents"],
            sparse_documents=sparse.run(query=query, top_k=k)["documents"],
        )["documents"]

    return {
        "dense": dense_answer,
        "bm25": lambda query, k: sparse.run(query=query, top_k=k)["documents"],
        "bm25 batch": lambda query, k: BM25BatchRetriever(bm25_store).run(queries=[query], top_k=k)["documents"][0],
        "hybrid": hybrid_answer,
        "cross-encoder": lambda query, k: ranker.run(query=query, documents=documents, top_k=k)["documents"],
    }


def _rule(query: Any) -> str | None:
    """What the shared query rule says about ``query``: its error message, or None for a good query."""
    try:
        check_query(query)
    except ValueError as error:
        return str(error)
    return None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=QUERIES, top_k=st.integers(1, 8))
def test_every_mode_answers_a_good_query_and_refuses_a_bad_one_alike(modes, query, top_k) -> None:
    refusal = _rule(query)
    for mode, answer in modes.items():
        if refusal is not None:
            with pytest.raises(ValueError) as raised:  # noqa: PT011 (exact message asserted below, batch name mapped)
                answer(query, top_k)
            assert str(raised.value).replace("queries[0]", "query") == refusal, mode
            continue
        scores = [document.score for document in answer(query, top_k)]
        assert len(scores) <= top_k, mode
        assert all(isinstance(s, float) and math.isfinite(s) for s in scores), mode
        assert scores == sorted(scores, reverse=True), mode
    if refusal is None:
        assert len(modes["dense"](query, top_k)) == min(top_k, len(PASSAGES)), "dense always has neighbours"


HIT_IDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
SCORES = st.sampled_from([0.0, 0.5, 1.0, 2.5, -3.0, 7.25])


@st.composite
def side_hits(draw: st.DrawFn, side: str) -> list[Document]:
    """One query's hits from one side: ids may repeat, scores tie, a stored meta may already say retrieval_type."""
    hits = []
    for doc_id, score in draw(st.lists(st.tuples(HIT_IDS, SCORES), max_size=6)):
        meta = {"title": doc_id, "retrieval_type": side} if draw(st.booleans()) else {"title": doc_id}
        hits.append(Document(id=doc_id, content=f"text {doc_id}", meta=meta, score=score))
    return hits


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.text("ab ", min_size=1, max_size=20).filter(str.strip), side_hits("dense"), side_hits("sparse")),
        min_size=1,
        max_size=3,
    ),
    st.integers(1, 8),
    st.booleans(),
)
def test_mix_joiner_fuses_as_the_mix_ranker_whatever_the_hits(
    cases: list[tuple[str, list[Document], list[Document]]], top_k: int, shared: bool
) -> None:
    queries = [query for query, _, _ in cases]
    dense, sparse = [hits for _, hits, _ in cases], [hits for _, _, hits in cases]
    expected = MixRetrieveBatchRanker(top_k=top_k).run(queries=queries, dense_documents=dense, sparse_documents=sparse)

    got = MixBatchJoiner(top_k=top_k).run(
        queries=queries,
        dense_candidates=candidates(dense, "dense", shared),
        sparse_candidates=candidates(sparse, "sparse", shared),
    )
    assert shown(got["documents"]) == shown(expected["documents"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(side_hits("dense"), side_hits("sparse")), min_size=1, max_size=3),
    st.integers(1, 8),
    st.booleans(),
    st.none() | st.tuples(st.integers(0, 3), st.integers(0, 3)).filter(any),
)
def test_rrf_joiner_fuses_as_haystacks_document_joiner_whatever_the_hits(
    cases: list[tuple[list[Document], list[Document]]], top_k: int, shared: bool, weights: tuple[int, int] | None
) -> None:
    dense, sparse = [hits for hits, _ in cases], [hits for _, hits in cases]
    joiner = DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=top_k, weights=weights and [*weights][::-1])
    # rrf_search.yaml hands DocumentJoiner the BM25 list first; a retriever's hits say which side found them
    expected = [
        joiner.run(documents=[retrieved(s_hits, "sparse", shared), retrieved(d_hits, "dense", shared)])["documents"]
        for d_hits, s_hits in cases
    ]
    got = RRFBatchJoiner(top_k=top_k, weights=weights and {"dense": weights[0], "sparse": weights[1]}).run(
        dense_candidates=candidates(dense, "dense", shared), sparse_candidates=candidates(sparse, "sparse", shared)
    )
    assert shown(got["documents"]) == shown(expected)


def candidates(lists: list[list[Document]], side: Side, shared: bool) -> Candidates:
    """The hits as a candidate retriever hands them over: a store's own documents and scores when ``shared``."""
    if shared:
        return Candidates.shared([(list(hits), [d.score for d in hits]) for hits in lists], side)
    return Candidates(lists, side)


def retrieved(hits: list[Document], side: str, shared: bool) -> list[Document]:
    """The hits as a (non-candidate) retriever returns them: from a store, marked with the side that found them."""
    if not shared:
        return hits
    return [Document(id=d.id, content=d.content, meta={**d.meta, "retrieval_type": side}, score=d.score) for d in hits]


def shown(lists: list[list[Document]]) -> list[list[tuple[Any, ...]]]:
    """What a user sees of each hit."""
    return [[(d.id, d.score, d.content, d.meta) for d in hits] for hits in lists]
