"""UltraRAG's own CLI on its shipped retriever examples, first with its own retriever server, then with needle's
drop-in in that server's place and nothing else changed: `ultrarag build` then `ultrarag run` of each, in a scratch
project laid out as UltraRAG's README has a user work.

The parameter files the build writes are edited only as a user on a CPU machine without a model hub edits them: the
model (a tiny local one), ``gpu_ids: null``, ``index_use_gpu: false``, ``backend: bm25`` for the BM25 examples (as
UltraRAG's docs say), the deploy client's ``retriever_url`` and the reranker's device. The deploy example searches
through a deploy server: UltraRAG's ``script/deploy_retriever_server.py`` beside its own server, ``needle serve`` of
the index ``corpus_index`` built beside needle's (with ``--trust-remote-code MODEL``, as its refusal of an index
built with the shipped ``trust_remote_code: true`` asks). Skipped without ULTRARAG_SRC and ULTRARAG_PYTHON.
"""

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.components.rankers.test_local_cross_encoder import minilm_cross_encoder  # noqa: F401 - session fixture
from tests.support.serve import free_port
from tests.support.ultrarag import (
    NEEDLE,
    PipelineRun,
    UltraRAG,
    build_and_run,
    edit_values,
    make_project,
    ultrarag_or_skip,
    wait_for_http,
)

pytestmark = pytest.mark.integration
TOP_K = 5  # the shipped parameter.yaml's top_k, which the tests keep
QUERIES = 10  # data/sample_nq_10.jsonl
PIPELINES = ["corpus_index", "corpus_search", "bm25_index", "bm25_search", "deploy_corpus_search", "corpus_rerank"]
SEARCHES = {
    "corpus_search": "memory_ret_psg",
    "bm25_search": "memory_ret_psg",
    "deploy_corpus_search": "memory_ret_psg",
}
DENSE = ["corpus_search", "deploy_corpus_search", "corpus_rerank"]
SIDES = ["ultrarag", "needle"]


def user_values(name: str, model: str, reranker: str, url: str) -> dict[str, Any]:
    """What a user edits in NAME's generated parameter file to run it here."""
    if name == "deploy_corpus_search":
        return {"retriever.retriever_url": url}
    values: dict[str, Any] = {
        "retriever.model_name_or_path": model,
        "retriever.gpu_ids": None,
        "retriever.index_backend_configs.faiss.index_use_gpu": False,
    }
    if name.startswith("bm25"):
        values["retriever.backend"] = "bm25"
    if name == "corpus_rerank":
        values |= {
            "reranker.model_name_or_path": reranker,
            "reranker.backend_configs.sentence_transformers.device": "cpu",
        }
    return values


def deploy_server(
    ultrarag: UltraRAG, project: Path, needle: bool, model: str, port: int
) -> tuple[subprocess.Popen[bytes], str | None]:
    """The server `retriever_deploy_search` posts to: `needle serve` of the dense index, or UltraRAG's own script
    with its JSON config edited as the parameter files are; with why it did not start, if it did not."""
    if needle:
        # The shipped parameter file builds with trust_remote_code: true; `needle serve` runs such an index's model
        # only when told to, and its refusal names this flag.
        command = [str(NEEDLE), "serve", "index/index.index", "--port", str(port), "--trust-remote-code", model]
    else:
        config = project / "script" / "deploy_retriever_config.json"
        edit_values(
            config,
            {"model_name_or_path": model, "gpu_ids": None, "index_backend_configs.faiss.index_use_gpu": False},
        )
        command = [str(ultrarag.python), "script/deploy_retriever_server.py", "--config_path", str(config)]
        command += ["--host", "127.0.0.1", "--port", str(port)]
    log = project / "deploy.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=project, env=ultrarag.env(), stdout=sink, stderr=subprocess.STDOUT)
    return process, wait_for_http(f"http://127.0.0.1:{port}/docs", process, log)


def run_examples(
    ultrarag: UltraRAG, tmp_path_factory: pytest.TempPathFactory, tiny_model: str, reranker: str, *, needle: bool
) -> Iterator[dict[str, PipelineRun]]:
    """Every example of PIPELINES built and run in order in one project; the deploy server stopped at the end."""
    project = make_project(
        tmp_path_factory.mktemp("needle" if needle else "ultrarag"), ultrarag, PIPELINES, needle=needle
    )
    port = free_port()
    runs: dict[str, PipelineRun] = {}
    server: subprocess.Popen[bytes] | None = None
    try:
        for name in PIPELINES:
            if name == "deploy_corpus_search":
                server, failed = deploy_server(ultrarag, project, needle, tiny_model, port)
                if failed:
                    runs[name] = PipelineRun(name, setup=f"the deploy server did not start: {failed}")
                    continue
            values = user_values(name, tiny_model, reranker, f"http://127.0.0.1:{port}")
            runs[name] = build_and_run(ultrarag, project, name, values)
        yield runs
    finally:
        if server is not None and server.poll() is None:
            server.terminate()
            server.wait(timeout=30)


@pytest.fixture(scope="module")
def ultrarag() -> UltraRAG:
    """UltraRAG's source and client, or a skip (before any model is built) naming what is missing."""
    return ultrarag_or_skip()


@pytest.fixture(scope="module")
def ultrarag_runs(
    ultrarag: UltraRAG,
    tmp_path_factory: pytest.TempPathFactory,
    tiny_model: str,
    minilm_cross_encoder: str,  # noqa: F811
) -> Iterator[dict[str, PipelineRun]]:
    yield from run_examples(ultrarag, tmp_path_factory, tiny_model, minilm_cross_encoder, needle=False)


@pytest.fixture(scope="module")
def needle_runs(
    ultrarag: UltraRAG,
    tmp_path_factory: pytest.TempPathFactory,
    tiny_model: str,
    minilm_cross_encoder: str,  # noqa: F811
) -> Iterator[dict[str, PipelineRun]]:
    yield from run_examples(ultrarag, tmp_path_factory, tiny_model, minilm_cross_encoder, needle=True)


def runs_of(request: pytest.FixtureRequest, side: str) -> dict[str, PipelineRun]:
    runs: dict[str, PipelineRun] = request.getfixturevalue(f"{side}_runs")
    return runs


@pytest.mark.parametrize("name", PIPELINES)
@pytest.mark.parametrize("side", SIDES)
def test_build_and_run_exit_0(request: pytest.FixtureRequest, side: str, name: str) -> None:
    done = runs_of(request, side)[name]
    assert done.failure is None, done.failure


@pytest.mark.parametrize("name", [*SEARCHES, "corpus_rerank"])
@pytest.mark.parametrize("side", SIDES)
def test_every_query_gets_top_k_passages(request: pytest.FixtureRequest, side: str, name: str) -> None:
    done = runs_of(request, side)[name]
    if done.failure:
        pytest.fail(done.failure)
    keys = ["memory_ret_psg", "memory_rerank_psg"] if name == "corpus_rerank" else [SEARCHES[name]]
    for key in keys:
        lists = done.last(key)
        assert len(lists) == QUERIES, key
        assert [len(passages) for passages in lists] == [TOP_K] * QUERIES, key
        assert all(isinstance(text, str) and text for passages in lists for text in passages), key


@pytest.mark.parametrize("name", DENSE)
def test_needle_passages_equal_ultrarags_own(request: pytest.FixtureRequest, name: str) -> None:
    theirs, ours = runs_of(request, "ultrarag")[name], runs_of(request, "needle")[name]
    for done in (theirs, ours):
        if done.failure:
            pytest.fail(done.failure)
    assert ours.last("memory_ret_psg") == theirs.last("memory_ret_psg")
    if name == "corpus_rerank":
        assert ours.last("memory_rerank_psg") == theirs.last("memory_rerank_psg")
