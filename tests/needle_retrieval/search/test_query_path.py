"""The fast query path answers exactly as the pipelines did before it: same ids, scores, order and documents.

One real index (MiniLM + FAISS + bm25s) over the sample corpus. The references are the pipelines as they were
wired before: the single-query YAML files with list embeddings (MixRetrieveRanker, Haystack's DocumentJoiner)
for single queries, and the batch pipelines with Document lists between stages (MixRetrieveBatchRanker; Haystack's
DocumentJoiner per query for rrf) for batches.
"""

import copy
import gc
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Document, Pipeline
from haystack.components.joiners import DocumentJoiner
from haystack.document_stores.in_memory import InMemoryDocumentStore

from components.embedders.sentence_transformers_batch_text_embedder import SentenceTransformersBatchTextEmbedder
from components.joiners.mix_batch_joiner import MixBatchJoiner
from components.joiners.rrf_batch_joiner import RRFBatchJoiner
from components.retrievers.bm25.batch_candidate_retriever import BM25BatchCandidateRetriever
from components.retrievers.candidates import Candidates
from components.retrievers.faiss.batch_candidate_retriever import FAISSBatchCandidateRetriever
from components.stores.hits import collector_paused
from needle_retrieval.defaults import DEFAULT_MODEL, DEFAULT_TOP_K
from needle_retrieval.index.build import build_index
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.templates import fill_search_pipeline
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.direct_run import DirectRun
from needle_retrieval.search.searcher import Searcher
from tests.support.paths import SAMPLE

MODES = ("dense", "bm25", "hybrid", "rrf")  # the modes of the --bm25 index built here (no learned sparse part)

QUERIES = [
    "compress data with gzip",
    "parse command line arguments",
    "abstract base classes",
    "read and write CSV files in Python with the csv module",
    "zip",
]
OLD_TYPES = {  # the batch components before Candidates
    "FAISSBatchCandidateRetriever": "components.retrievers.faiss.batch_embedding_retriever."
    "FAISSBatchEmbeddingRetriever",
    "BM25BatchCandidateRetriever": "components.retrievers.bm25.batch_retriever.BM25BatchRetriever",
    "MixBatchJoiner": "components.rankers.mix_retrieve_batch_ranker.MixRetrieveBatchRanker",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("query-path") / "index"
    build_index(SAMPLE, out, model=DEFAULT_MODEL, overwrite=False, bm25=True)
    return out


def shown(documents: list[Document]) -> list[tuple[Any, ...]]:
    """Everything a user sees of a result list."""
    return [(d.id, d.score, d.content, d.meta) for d in documents]


def single_reference(index: Path, mode: str) -> pf.QueryPipeline:
    """The single-query pipeline with list embeddings, as before (MixRetrieveRanker, DocumentJoiner)."""
    data = fill_search_pipeline(index, IndexManifest.load(index), mode)
    if "embedder" in data["components"]:
        data["components"]["embedder"]["init_parameters"]["as_array"] = False
    return pf.QueryPipeline(data, mode)


def batch_reference(index: Path, mode: str, top_k: int, queries: list[str]) -> list[list[Document]]:
    """The batch pipeline with Document lists between stages, as before; rrf: DocumentJoiner per query."""
    template = "hybrid_batch" if mode == "rrf" else f"{mode}_batch"
    data = fill_search_pipeline(index, IndexManifest.load(index), template)
    components = data["components"]
    for name, spec in components.items():
        spec["type"] = OLD_TYPES.get(spec["type"].rsplit(".", 1)[1], spec["type"])
        if name == "embedder":
            spec["init_parameters"]["as_array"] = False
    for connection in data.get("connections", []):
        connection["sender"] = connection["sender"].replace(".candidates", ".documents")
        connection["receiver"] = connection["receiver"].replace("_candidates", "_documents")
    if mode != "rrf":
        return pf.QueryPipeline(data, template, "queries").run(queries, top_k)
    for name in ("dense", "bm25"):
        components[name]["init_parameters"]["top_k"] = max(100, top_k)
    pipeline = pf.build(data)
    outputs = pipeline.run(
        {"embedder": {"texts": queries}, "bm25": {"queries": queries}, "mix": {"queries": queries}},
        include_outputs_from={"dense", "bm25"},
    )
    joiner = DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=top_k)
    pairs = zip(outputs["bm25"]["documents"], outputs["dense"]["documents"], strict=True)
    return [joiner.run(documents=[sparse, dense])["documents"] for sparse, dense in pairs]


@pytest.mark.parametrize("top_k", [10, 100])
@pytest.mark.parametrize("mode", MODES)
def test_single_queries_answer_as_the_single_query_pipelines_did(index: Path, mode: str, top_k: int) -> None:
    searcher = Searcher(index, mode, top_k)
    reference = single_reference(index, mode)
    for query in QUERIES:
        expected = reference.run(query, top_k)
        assert expected, f"{mode}: the reference finds nothing for {query!r}"
        assert shown(searcher.search([query])[0]) == shown(expected)


@pytest.mark.parametrize("top_k", [10, 100])
@pytest.mark.parametrize("mode", MODES)
def test_batches_answer_as_the_batch_pipelines_did(index: Path, mode: str, top_k: int) -> None:
    queries = list(QUERIES)
    got = Searcher(index, mode, top_k).search(queries)
    assert queries == QUERIES  # the caller's list is left as it was
    expected = batch_reference(index, mode, top_k, QUERIES)
    assert [shown(hits) for hits in got] == [shown(hits) for hits in expected]
    assert all(len(hits) == min(top_k, 274) for hits in got if mode != "bm25")


@pytest.mark.filterwarnings("ignore:Mutating attribute")  # what a careless caller does: Haystack warns, we survive
@pytest.mark.parametrize("queries", [QUERIES[:1], QUERIES[:2]], ids=["single", "batch"])
@pytest.mark.parametrize("mode", MODES)
def test_documents_come_back_whole_and_changing_them_changes_no_later_answer(
    index: Path, mode: str, queries: list[str]
) -> None:
    searcher = Searcher(index, mode, 10)
    first = searcher.search(queries)[0]
    before = copy.deepcopy(shown(first))
    for doc in first:
        assert doc.content
        assert doc.meta["title"]
        assert doc.score is not None
        if mode == "hybrid":
            assert doc.meta["retrieval_sources"]
            doc.meta["retrieval_sources"].append("changed")
        doc.meta["title"] = "changed"
        doc.content = "changed"
        doc.score = -1.0
    assert shown(searcher.search(queries)[0]) == before


@pytest.mark.parametrize("enabled", [True, False])
def test_a_search_leaves_the_garbage_collector_as_it_found_it(index: Path, enabled: bool) -> None:
    searcher = Searcher(index, "hybrid", 100)
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert searcher.search(QUERIES)
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError, match="inside the block"), collector_paused():
            raise ValueError("a failure inside the block")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_shared_candidates_read_out_new_hits_and_leave_the_stored_documents_alone() -> None:
    stored = [Document(id="a", content="alpha", meta={"x": 1}), Document(id="b", content="beta")]
    candidates = Candidates.shared([(stored, [2.0, 1.0])], "sparse")
    hit = candidates.document(0, 0)
    assert (hit.id, hit.score, hit.meta) == ("a", 2.0, {"x": 1, "retrieval_type": "sparse"})
    hit.meta["x"] = 99
    assert stored[0].meta == {"x": 1}
    assert stored[0].score is None
    assert candidates.scores(0) == (2.0, 1.0)
    as_hits = Candidates([candidates.documents(0)], "sparse")
    assert [shown(as_hits.documents(0))] == [shown(candidates.documents(0))]
    again = Candidates.from_dict(candidates.to_dict())
    assert shown(again.documents(0)) == shown(candidates.documents(0))


def test_candidates_are_immutable_values() -> None:
    hits = [Document(id="a", content="alpha", meta={"x": 1}, score=2.0), Document(id="b", content="beta", score=1.0)]
    candidates = Candidates([hits], "dense")
    assert copy.deepcopy(candidates) is candidates  # nothing in it can change: Haystack need not copy it
    copied = candidates.document(0, 0)
    copied.meta["x"] = 99
    assert candidates.document(0, 0).meta == {"x": 1}
    assert candidates.ids(0) == ("a", "b")
    assert candidates.scores(0) == (2.0, 1.0)
    again = Candidates.from_dict(candidates.to_dict())
    assert [d.to_dict() for d in again.documents(0)] == [d.to_dict() for d in candidates.documents(0)]
    with pytest.raises(ValueError, match="side must be 'dense' or 'sparse'"):
        Candidates([hits], "hybrid")  # type: ignore[arg-type]


def test_a_side_wired_to_the_other_sides_socket_is_refused() -> None:
    dense = Candidates([[Document(id="a", content="alpha", score=1.0)]], "dense")
    with pytest.raises(ValueError, match="sparse_candidates got dense candidates"):
        MixBatchJoiner(top_k=3).run(queries=["q"], sparse_candidates=dense)
    with pytest.raises(ValueError, match="dense_candidates holds 1 result lists for 2 queries"):
        MixBatchJoiner(top_k=3).run(queries=["q", "r"], dense_candidates=dense)
    bad = Candidates([[Document(id="a", content="alpha", score=float("nan"))]], "dense")
    with pytest.raises(ValueError, match=r"dense_candidates\[0\]\[0\] \(id=a\) has score nan"):
        MixBatchJoiner(top_k=3).run(queries=["q"], dense_candidates=bad)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"dense": 1.0}, "weights must be None or"),
        ({"dense": -1, "sparse": 1}, ">= 0"),
        ({"dense": 0, "sparse": 0}, "zero"),
    ],
)
def test_rrf_joiner_refuses_bad_weights(weights: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RRFBatchJoiner(weights=weights)


def test_rrf_joiner_weights_match_document_joiner() -> None:
    dense = [Document(id=i, content=i, score=1.0, meta={"retrieval_type": "dense"}) for i in "abcd"]
    sparse = [Document(id=i, content=i, score=1.0, meta={"retrieval_type": "sparse"}) for i in "dbex"]
    joined = RRFBatchJoiner(top_k=5, weights={"dense": 3, "sparse": 1}).run(
        dense_candidates=Candidates([dense], "dense"), sparse_candidates=Candidates([sparse], "sparse")
    )["documents"][0]
    expected = DocumentJoiner(join_mode="reciprocal_rank_fusion", weights=[1, 3], top_k=5).run([sparse, dense])
    assert shown(joined) == shown(expected["documents"])


@pytest.mark.parametrize("k", [0, 1001, 2.5, True])
def test_rrf_joiner_refuses_a_k_out_of_range(k: int) -> None:
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 1000\]"):
        RRFBatchJoiner(k=k)


def test_rrf_joiner_k_sets_how_much_the_top_ranks_count() -> None:
    dense = [Document(id=i, content=i, score=1.0, meta={"retrieval_type": "dense"}) for i in "paq"]
    sparse = [Document(id=i, content=i, score=1.0, meta={"retrieval_type": "sparse"}) for i in "xyq"]
    run = {"dense_candidates": Candidates([dense], "dense"), "sparse_candidates": Candidates([sparse], "sparse")}
    # "q" is third in both lists, "p" and "x" first in one: a large k rewards agreement, a small k the top rank.
    wide = RRFBatchJoiner(top_k=3, k=1000).run(**run)["documents"][0]
    sharp = RRFBatchJoiner(top_k=3, k=1).run(**run)["documents"][0]
    assert wide[0].id == "q"
    assert wide[0].score == pytest.approx((1 / 1002 + 1 / 1002) / (2 / 1000))
    assert [d.id for d in sharp] == ["x", "p", "q"]  # x and p tie at 1/1; the BM25 list is seen first
    assert sharp[2].score == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert RRFBatchJoiner.from_dict(RRFBatchJoiner(k=7).to_dict()).k == 7


def test_new_components_and_as_array_survive_yaml(index: Path) -> None:
    data = fill_search_pipeline(index, IndexManifest.load(index), "rrf_batch")
    pipeline = pf.build(data)
    again = Pipeline.loads(yaml.safe_dump(yaml.safe_load(pipeline.dumps())))
    assert again.to_dict()["components"] == pipeline.to_dict()["components"]
    for name, kind in [("dense", FAISSBatchCandidateRetriever), ("bm25", BM25BatchCandidateRetriever)]:
        assert isinstance(again.get_component(name), kind)
    assert again.get_component("joiner").to_dict() == RRFBatchJoiner(top_k=DEFAULT_TOP_K).to_dict()
    embedder = again.get_component("embedder")
    assert isinstance(embedder, SentenceTransformersBatchTextEmbedder)
    assert embedder.as_array is True
    mix = MixBatchJoiner(top_k=4, midpoint=9.0)
    assert MixBatchJoiner.from_dict(mix.to_dict()).to_dict() == mix.to_dict()


def test_as_array_must_be_a_boolean() -> None:
    with pytest.raises(ValueError, match="as_array must be true or false"):
        SentenceTransformersBatchTextEmbedder(as_array="yes")  # type: ignore[arg-type]


DIRECT = [("bm25", "query"), ("bm25_batch", "queries"), ("dense", "query"), ("dense_batch", "queries")]
DIRECT += [("hybrid", "query"), ("hybrid_batch", "queries"), ("rrf_batch", "queries")]


@pytest.mark.parametrize(("template", "socket"), DIRECT)
def test_a_pipeline_of_our_components_run_directly_answers_as_pipeline_run(
    index: Path, template: str, socket: str
) -> None:
    data = fill_search_pipeline(index, IndexManifest.load(index), template)
    runner = pf.QueryPipeline(copy.deepcopy(data), template, socket, False)
    assert runner.runner.direct is not None  # the shortcut is taken, not Pipeline.run
    feed = QUERIES if socket == "queries" else QUERIES[0]
    expected = pf.QueryPipeline(data, template, socket)
    expected.runner.direct = None
    answers = runner.run(feed, 7)  # never warmed up by the caller: the first direct run does it
    theirs = expected.run(feed, 7)
    pairs = zip(answers, theirs, strict=True) if socket == "queries" else [(answers, theirs)]
    for ours, theirs in pairs:
        assert ours, f"{template}: nothing found"
        assert shown(ours) == shown(theirs)
    with pytest.raises(ValueError, match="empty"):
        runner.run([""] if socket == "queries" else "")


def test_pipelines_that_need_haystacks_scheduler_keep_it(index: Path) -> None:
    rrf = pf.QueryPipeline(fill_search_pipeline(index, IndexManifest.load(index), "rrf"), "rrf")
    assert rrf.runner.direct is None  # Haystack's DocumentJoiner takes several senders on one socket
    assert len(rrf.run(QUERIES[0], 7)) == 7
    data = fill_search_pipeline(index, IndexManifest.load(index), "bm25")
    data["components"]["order"] = {
        "type": "haystack.components.rankers.lost_in_the_middle.LostInTheMiddleRanker",
        "init_parameters": {},
    }
    data["connections"] = [{"sender": "retriever.documents", "receiver": "order.documents"}]
    data["outputs"]["documents"] = "order.documents"
    ordered = pf.QueryPipeline(data, "bm25")
    assert ordered.runner.direct is None  # a component that is not one of ours may change its inputs
    plain = pf.QueryPipeline(fill_search_pipeline(index, IndexManifest.load(index), "bm25"), "bm25")
    assert sorted(d.id for d in ordered.run(QUERIES[0], 7)) == sorted(d.id for d in plain.run(QUERIES[0], 7))


@pytest.mark.parametrize("template", ["bm25_index", "dense_index"])
def test_index_pipelines_run_directly_but_a_writer_into_another_store_does_not(template: str, tmp_path: Path) -> None:
    fed = {("reader", "path"), ("reader", "skip"), ("reader", "limit"), ("embedder", "offset"), ("embedder", "total")}
    data = pf.load_template(template)
    pf.set_init_param(data, "writer.document_store.path", str(tmp_path / "store"))
    assert DirectRun.plan(pf.build(data), fed) is not None  # the writer hands the chunk to one of our stores
    data["components"]["writer"]["init_parameters"]["document_store"] = InMemoryDocumentStore().to_dict()
    assert DirectRun.plan(pf.build(data), fed) is None  # Haystack's store: Pipeline.run copies the chunk first
