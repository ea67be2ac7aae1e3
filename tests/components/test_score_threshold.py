"""``score_threshold`` on every retriever, ranker and fusion joiner, on real stores and real (tiny) models.

One table of components (``CASES``) over one corpus (tests.support.milvus's: random words, random unit vectors),
each run as a pipeline would run it: BM25 (bm25s), FAISS and Milvus Lite retrievers, single, batch and candidate;
the mix rankers and joiners and the RRF joiner over real retrieval results; a cross-encoder (MiniLM with a random
head) and TEIRanker against tests/support/servers/tei.py. For each: a threshold keeps exactly the hits scoring at
least it (order and scores unchanged), the run-time value overrides the init one (None keeps it), ``run_async``
agrees, bad values are refused at init and at run naming the parameter, and the setting survives to_dict/from_dict
and a YAML pipeline (a file without it loads with none).
"""

import asyncio
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document, Pipeline

import components  # noqa: F401 - registers our modules with Haystack's deserialization allowlist
from components.joiners import MixBatchJoiner, RRFBatchJoiner
from components.rankers import (
    LocalCrossEncoderRanker,
    MixRetrieveBatchRanker,
    MixRetrieveRanker,
    TEIRanker,
)
from components.retrievers.bm25 import BM25BatchRetriever, BM25Retriever
from components.retrievers.bm25.batch_candidate_retriever import BM25BatchCandidateRetriever
from components.retrievers.candidates import Candidates
from components.retrievers.faiss import FAISSBatchEmbeddingRetriever, FAISSEmbeddingRetriever
from components.retrievers.faiss.batch_candidate_retriever import FAISSBatchCandidateRetriever
from components.retrievers.milvus import (
    MilvusBatchEmbeddingRetriever,
    MilvusBM25BatchRetriever,
    MilvusBM25Retriever,
    MilvusEmbeddingRetriever,
    MilvusHybridBatchRetriever,
    MilvusHybridRetriever,
)
from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore
from components.stores.milvus import MilvusDocumentStore
from tests.components.rankers.test_local_cross_encoder import minilm_cross_encoder  # noqa: F401 - session fixture
from tests.components.rankers.test_tei import serve
from tests.support.milvus import corpus

QUERIES = ["alpha river stone", "omega cloud", "kappa lambda sigma theta"]
RANK_QUERY = "alpha river stone omega cloud kappa"  # many words: the TEI stand-in's overlap scores differ
BAD = [math.nan, math.inf, -math.inf, True, "0.5", [0.5]]
Hits = list[list[tuple[str, Any]]]  # (id, score) per hit, per query


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return corpus(60)


@pytest.fixture(scope="module")
def vectors(docs: list[Document]) -> np.ndarray:
    """One query embedding per query: a stored vector, nudged."""
    rng = np.random.default_rng(1)
    picked = np.array([docs[i].embedding for i in (3, 17, 40)], dtype=np.float32)
    return picked + 0.3 * rng.standard_normal(picked.shape).astype(np.float32)


@pytest.fixture(scope="module")
def stores(docs: list[Document], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The three stores, holding the same corpus: bm25s (in memory), FAISS (cosine) and Milvus Lite."""
    root = tmp_path_factory.mktemp("threshold")
    bm25 = BM25DocumentStore()
    bm25.write_documents([Document(id=d.id, content=d.content, meta=d.meta) for d in docs])
    faiss = FAISSDocumentStore(path=str(root / "faiss"), metric="cosine")
    faiss.write_documents(docs)
    milvus = MilvusDocumentStore(uri=str(root / "m.db"), collection_name="threshold")
    milvus.write_documents(docs)
    yield {"bm25": bm25, "faiss": faiss, "milvus": milvus}
    milvus.close()


@pytest.fixture(scope="module")
def tei_url() -> Iterator[str]:
    with serve() as base:
        yield f"{base}/rerank"


def lists_of(output: dict[str, Any], single: bool) -> Hits:
    """(id, score) per hit, per query, whatever the component's output: one list (SINGLE), lists, or Candidates."""
    if "candidates" in output:
        found: Candidates = output["candidates"]
        return [list(zip(found.ids(q), found.scores(q), strict=True)) for q in range(len(found))]
    documents = output["documents"]
    return [[(d.id, d.score) for d in hits] for hits in ([documents] if single else documents)]


class Case:
    """One component under test: how to build it with an init threshold, and the inputs of one run."""

    def __init__(self, build: Callable[[float | None], Any], inputs: dict[str, Any]) -> None:
        self.build, self.inputs = build, inputs
        self.single = "query" in inputs or "query_embedding" in inputs  # one query: one list of documents

    def hits(self, threshold: float | None = None, **run: Any) -> Hits:
        return self.output(self.build(threshold).run(**self.inputs, **run))

    def output(self, found: dict[str, Any]) -> Hits:
        return lists_of(found, self.single)


@pytest.fixture(
    params=[
        "bm25",
        "bm25-batch",
        "bm25-candidates",
        "faiss",
        "faiss-batch",
        "faiss-candidates",
        "milvus-dense",
        "milvus-dense-batch",
        "milvus-bm25",
        "milvus-bm25-batch",
        "milvus-hybrid",
        "milvus-hybrid-batch",
        "mix",
        "mix-batch",
        "mix-joiner",
        "rrf-joiner",
        "cross-encoder",
        "tei",
    ]
)
def case(request: pytest.FixtureRequest, stores: dict[str, Any], vectors: np.ndarray) -> Case:
    name: str = request.param
    bm25, faiss, milvus = stores["bm25"], stores["faiss"], stores["milvus"]
    listed = vectors.tolist()
    k: dict[str, Any] = {"top_k": 12}
    if name in ("cross-encoder", "tei"):
        inputs = {"query": RANK_QUERY, "documents": BM25Retriever(bm25, top_k=20).run(query=RANK_QUERY)["documents"]}
        if name == "tei":
            url = request.getfixturevalue("tei_url")
            return Case(lambda t: TEIRanker(url, top_k=20, api_key=None, score_threshold=t), inputs)
        model = request.getfixturevalue("minilm_cross_encoder")
        return Case(lambda t: LocalCrossEncoderRanker(model, top_k=20, use_fp16=False, score_threshold=t), inputs)
    dense = FAISSBatchEmbeddingRetriever(faiss, top_k=12).run(query_embeddings=vectors)["documents"]
    sparse = BM25BatchRetriever(bm25, top_k=12).run(queries=QUERIES)["documents"]
    dense_candidates = FAISSBatchCandidateRetriever(faiss, top_k=12).run(query_embeddings=vectors)["candidates"]
    sparse_candidates = BM25BatchCandidateRetriever(bm25, top_k=12).run(queries=QUERIES)["candidates"]
    cases: dict[str, tuple[Callable[[float | None], Any], dict[str, Any]]] = {
        "bm25": (lambda t: BM25Retriever(bm25, score_threshold=t, **k), {"query": QUERIES[0]}),
        "bm25-batch": (lambda t: BM25BatchRetriever(bm25, score_threshold=t, **k), {"queries": QUERIES}),
        "bm25-candidates": (lambda t: BM25BatchCandidateRetriever(bm25, score_threshold=t, **k), {"queries": QUERIES}),
        "faiss": (lambda t: FAISSEmbeddingRetriever(faiss, score_threshold=t, **k), {"query_embedding": listed[0]}),
        "faiss-batch": (
            lambda t: FAISSBatchEmbeddingRetriever(faiss, score_threshold=t, **k),
            {"query_embeddings": vectors},
        ),
        "faiss-candidates": (
            lambda t: FAISSBatchCandidateRetriever(faiss, score_threshold=t, **k),
            {"query_embeddings": vectors},
        ),
        "milvus-dense": (
            lambda t: MilvusEmbeddingRetriever(milvus, score_threshold=t, **k),
            {"query_embedding": listed[0]},
        ),
        "milvus-dense-batch": (
            lambda t: MilvusBatchEmbeddingRetriever(milvus, score_threshold=t, **k),
            {"query_embeddings": listed},
        ),
        "milvus-bm25": (lambda t: MilvusBM25Retriever(milvus, score_threshold=t, **k), {"query": QUERIES[0]}),
        "milvus-bm25-batch": (
            lambda t: MilvusBM25BatchRetriever(milvus, score_threshold=t, **k),
            {"queries": QUERIES},
        ),
        "milvus-hybrid": (
            lambda t: MilvusHybridRetriever(milvus, score_threshold=t, **k),
            {"query": QUERIES[0], "query_embedding": listed[0]},
        ),
        "milvus-hybrid-batch": (
            lambda t: MilvusHybridBatchRetriever(milvus, ranker="weighted", score_threshold=t, **k),
            {"queries": QUERIES, "query_embeddings": listed},
        ),
        "mix": (
            lambda t: MixRetrieveRanker(score_threshold=t, **k),
            {"query": QUERIES[0], "dense_documents": dense[0], "sparse_documents": sparse[0]},
        ),
        "mix-batch": (
            lambda t: MixRetrieveBatchRanker(score_threshold=t, **k),
            {"queries": QUERIES, "dense_documents": dense, "sparse_documents": sparse},
        ),
        "mix-joiner": (
            lambda t: MixBatchJoiner(score_threshold=t, **k),
            {"queries": QUERIES, "dense_candidates": dense_candidates, "sparse_candidates": sparse_candidates},
        ),
        "rrf-joiner": (
            lambda t: RRFBatchJoiner(score_threshold=t, **k),
            {"dense_candidates": dense_candidates, "sparse_candidates": sparse_candidates},
        ),
    }
    return Case(*cases[name])


def middle_score(hits: Hits) -> float:
    """A score of the first query's hits with distinct scores both above and below it."""
    distinct = sorted({score for _, score in hits[0]})
    assert len(distinct) >= 3, f"too few distinct scores to test a threshold: {hits[0]}"
    return float(distinct[len(distinct) // 2])


def kept(hits: Hits, threshold: float) -> Hits:
    return [[(doc_id, score) for doc_id, score in query if score >= threshold] for query in hits]


def test_a_threshold_drops_exactly_the_hits_scoring_below_it(case: Case) -> None:
    everything = case.hits()
    threshold = middle_score(everything)
    expected = kept(everything, threshold)
    assert case.hits(threshold) == expected
    assert next(hit for hit in everything[0] if hit[1] == threshold) in expected[0]  # a hit AT the threshold stays
    assert sum(map(len, expected)) < sum(map(len, everything))


def test_the_run_time_threshold_overrides_the_init_one(case: Case) -> None:
    everything = case.hits()
    threshold = middle_score(everything)
    expected = kept(everything, threshold)
    above_all = max(score for query in everything for _, score in query) + 1.0
    assert case.hits(above_all) == [[] for _ in everything]
    assert case.hits(above_all, score_threshold=threshold) == expected
    assert case.hits(None, score_threshold=threshold) == expected
    assert case.hits(threshold, score_threshold=None) == expected  # None at run time keeps the init one
    assert case.hits(threshold, score_threshold=-1e300) == everything


def test_run_async_takes_the_threshold_too(case: Case) -> None:
    component = case.build(None)
    if not hasattr(component, "run_async"):
        pytest.skip(f"{type(component).__name__} has no run_async (Haystack runs its run in a thread)")
    everything = case.hits()
    threshold = middle_score(everything)
    output = asyncio.run(component.run_async(**case.inputs, score_threshold=threshold))
    assert case.output(output) == kept(everything, threshold)


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_bad_thresholds_are_refused_at_init_and_at_run(case: Case, bad: Any) -> None:
    with pytest.raises(ValueError, match=r"^score_threshold must be None or a finite number"):
        case.build(bad)
    with pytest.raises(ValueError, match=r"^score_threshold must be None or a finite number"):
        case.build(None).run(**case.inputs, score_threshold=bad)


def test_the_threshold_round_trips_through_to_dict_and_yaml(case: Case) -> None:
    component = case.build(0.25)
    data = component.to_dict()
    assert data["init_parameters"]["score_threshold"] == 0.25
    assert type(component).from_dict(data).to_dict() == data
    del data["init_parameters"]["score_threshold"]  # a pipeline file written before the parameter existed
    assert type(component).from_dict(data).score_threshold is None
    pipeline = Pipeline()
    pipeline.add_component("c", component)
    loaded: Any = Pipeline.loads(pipeline.dumps()).get_component("c")
    assert loaded.score_threshold == 0.25
    assert case.build(None).to_dict()["init_parameters"]["score_threshold"] is None


def test_an_unset_threshold_leaves_the_hits_as_they_were(case: Case) -> None:
    """The default (None) and a threshold below every score answer alike: nothing is dropped."""
    everything = case.hits()
    assert all(len(query) > 0 for query in everything)
    assert case.hits(-1e300) == everything == case.hits(None, score_threshold=None)


def test_a_hit_without_a_score_is_dropped_once_a_threshold_is_set() -> None:
    from components.score_threshold import above_threshold

    hits = [Document(id="a", score=0.9), Document(id="b", score=None), Document(id="c", score=0.1)]
    assert [d.id for d in above_threshold(hits, 0.0)] == ["a", "c"]
    assert above_threshold(hits, None) is hits


def test_remote_retrievers_refuse_a_threshold_saying_why(tmp_path: Path) -> None:
    from components.retrievers.remote import UltraRAGRemoteBatchRetriever, UltraRAGRemoteRetriever

    for cls in (UltraRAGRemoteRetriever, UltraRAGRemoteBatchRetriever):
        with pytest.raises(ValueError, match=r"score_threshold must be None .* answers passages without scores"):
            cls(retriever_url="127.0.0.1:9", score_threshold=0.5)
        retriever = cls(retriever_url="127.0.0.1:9")
        assert retriever.to_dict()["init_parameters"]["score_threshold"] is None
        inputs = {"query": "zip"} if cls is UltraRAGRemoteRetriever else {"queries": ["zip"]}
        with pytest.raises(ValueError, match="without scores"):
            retriever.run(**inputs, score_threshold=0.5)
        with pytest.raises(ValueError, match="without scores"):
            asyncio.run(retriever.run_async(**inputs, score_threshold=0.5))


def test_rerank_top_k_keeps_no_object_below_the_init_threshold() -> None:
    """mxRAG's ``rerank_top_k`` applies the ranker's threshold too (its run-time call has no threshold input)."""
    objs, scores = ["a", "b", "c", "d"], np.array([0.2, 0.9, 0.5, 0.4])
    assert MixRetrieveRanker(top_k=3).rerank_top_k(objs, scores) == ["b", "c", "d"]
    assert MixRetrieveRanker(top_k=3, score_threshold=0.5).rerank_top_k(objs, scores) == ["b", "c"]
    assert MixRetrieveRanker(top_k=3, score_threshold=0.95).rerank_top_k(objs, scores) == []
