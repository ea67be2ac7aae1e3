"""The one feed rule and the one runner of every entry point, on the search pipelines of a real small index.

``SearchPlan.feed``: the query to the declared sockets, ``top_k`` to the answering component with the candidate
generators keeping at least their own, an instruction to the query embedder's run input. ``SearchRunner``: the
answer ``Pipeline.run(feed, include_outputs_from={answering})`` gives, on the direct path as on Haystack's.
"""

from pathlib import Path
from typing import Any

import pytest
from haystack.core.errors import PipelineRuntimeError

from needle_retrieval.defaults import DEFAULT_MODEL, DEFAULT_TOP_K
from needle_retrieval.index.build import build_index
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.templates import fill_search_pipeline
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.feed import SearchPlan
from needle_retrieval.pipelines.runner import SearchRunner
from needle_retrieval.serve.pipelines import servable_modes
from tests.support.paths import SAMPLE

QUERY = "read and write zip archives"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Dense and BM25 parts over the first 60 sample passages."""
    folder = tmp_path_factory.mktemp("feed")
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(True)[:60]), encoding="utf-8")
    build_index(corpus, folder / "index", model=DEFAULT_MODEL, overwrite=False, bm25=True)
    return folder / "index"


def filled(index: Path, template: str) -> dict[str, Any]:
    return fill_search_pipeline(index, IndexManifest.load(index), template)


def test_top_k_goes_to_the_answer_and_candidates_keep_at_least_their_own(index: Path) -> None:
    plan = SearchPlan.of(filled(index, "hybrid"))
    assert plan.feed(QUERY, 3) == {
        "embedder": {"text": QUERY},
        "bm25": {"query": QUERY, "top_k": 100},
        "mix": {"query": QUERY, "top_k": 3},
        "dense": {"top_k": 100},
    }
    assert plan.feed(QUERY, 500)["dense"] == {"top_k": 500}
    assert plan.feed(QUERY) == {"embedder": {"text": QUERY}, "bm25": {"query": QUERY}, "mix": {"query": QUERY}}


def test_an_instruction_goes_to_the_query_embedder_only(index: Path) -> None:
    batch = SearchPlan.of(filled(index, "hybrid_batch"), "queries")
    fed = batch.feed([QUERY], None, "query: ")
    assert fed["embedder"] == {"texts": [QUERY], "query_instruction": "query: "}
    assert fed["bm25"] == {"queries": [QUERY]}  # BM25 sees the query as sent
    assert batch.feed([QUERY], None, "")["embedder"]["query_instruction"] == ""  # none, in place of the recorded
    assert "query_instruction" not in batch.feed([QUERY])["embedder"]  # None: the recorded one
    assert SearchPlan.of(filled(index, "bm25")).feed(QUERY, None, "query: ") == {"retriever": {"query": QUERY}}


@pytest.mark.parametrize("batch", [False, True])
def test_every_pipeline_of_an_index_answers_the_default_top_k_by_itself(index: Path, batch: bool) -> None:
    manifest = IndexManifest.load(index)
    for mode in servable_modes(manifest):
        data = filled(index, manifest.template(mode, batch))
        plan = SearchPlan.of(data, "queries" if batch else "query")
        assert plan.top_k_defaults[plan.answering] == DEFAULT_TOP_K, mode
        assert plan.top_k_defaults == plan.top_k_values(DEFAULT_TOP_K), mode


@pytest.mark.parametrize(("template", "direct"), [("hybrid", True), ("dense_batch", True), ("rrf", False)])
def test_the_runner_answers_what_pipeline_run_answers(index: Path, template: str, direct: bool) -> None:
    input_name = "queries" if template.endswith("_batch") else "query"
    data = filled(index, template)
    plan = SearchPlan.of(data, input_name)
    pipeline = pf.build(data)
    pipeline.warm_up()
    runner = SearchRunner(pipeline, plan, warm=True)
    assert (runner.direct is not None) is direct
    query: str | list[str] = [QUERY, "parse command line arguments"] if plan.batch else QUERY
    ours = runner.run(query, 7, "query: ")
    theirs = pipeline.run(plan.feed(query, 7, "query: "), include_outputs_from={plan.answering})
    assert shape(ours) == shape(theirs)
    assert set(ours) == {plan.answering}  # every other output feeds a component
    assert ids(ours[plan.answering]["documents"]) == ids(theirs[plan.answering]["documents"])
    assert ids(runner.documents(query, 7, "query: ")) == ids(theirs[plan.answering]["documents"])


def shape(outputs: dict[str, Any]) -> dict[str, set[str]]:
    return {name: set(sockets) for name, sockets in outputs.items()}


def ids(documents: Any) -> Any:
    """The ids of a result list, or of each list of a batch's."""
    if documents and isinstance(documents[0], list):
        return [[d.id for d in hits] for hits in documents]
    return [d.id for d in documents]


def test_a_component_error_comes_wrapped_as_pipeline_run_raises_it_when_asked(index: Path) -> None:
    data = filled(index, "bm25")
    pipeline = pf.build(data)
    plain = SearchRunner(pipeline, SearchPlan.of(data))
    wrapped = SearchRunner(pipeline, SearchPlan.of(data), wrap_errors=True)
    with pytest.raises(ValueError, match="query is empty"):
        plain.run("   ")
    with pytest.raises(PipelineRuntimeError) as caught:
        wrapped.run("   ")
    assert isinstance(caught.value.__cause__, ValueError)
