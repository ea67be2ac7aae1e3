"""Hayhooks' own server, `hayhooks run`, serves every search pipeline `needle index` writes, with the guide's one line.

The real CLI (``.venv/bin/hayhooks``, a subprocess on a free 127.0.0.1 port) is started as docs/guides/serving.md says,
``hayhooks run --pipelines-dir DIR/$(cat DIR/CURRENT)/hayhooks``, with no deserialization allowlist in its
environment, from a working directory that is not the index, over a copy of the index moved away from where it was
built (its pipelines name paths relative to DIR). Every generated pipeline deploys and answers a query; a request's
``top_k`` sets the number of hits and may be left out; a blank query, an empty one and a ``top_k`` of 0 are 4xx
with a message, not 500s; and serving writes nothing into the index.
"""

import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.integrity import edit_manifest, live, reseal
from tests.support.payloads import model_with_code
from tests.support.serve import ALL_PIPELINES, START_TIMEOUT_S, Server, free_port, sample_index, server_env, stop, tree

pytestmark = pytest.mark.integration
HAYHOOKS = Path(sys.executable).parent / "hayhooks"
ANSWERING = {"dense_search": "retriever", "bm25_search": "retriever", "hybrid_search": "mix", "rrf_search": "joiner"}
QUERY = "read and write ZIP files"


@dataclass(frozen=True)
class Served:
    """The running `hayhooks run`, the index it serves and that index's tree before the server started."""

    server: Server
    index: Path
    tree_before: dict[str, str]


def wait_until_answering(server: Server) -> None:
    """Wait until Hayhooks answers /status (it answers only once its start-up deployment is over)."""
    end = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < end:
        if server.process.poll() is not None:
            pytest.fail(f"hayhooks run exited with {server.process.returncode}:\n{server.output()[-3000:]}")
        with contextlib.suppress(OSError):
            if server.request("GET", "/status", timeout=5).status == 200:
                return
        time.sleep(0.5)
    stop(server)
    pytest.fail(f"hayhooks run did not answer within {START_TIMEOUT_S:.0f}s:\n{server.output()[-3000:]}")


def start_hayhooks(index: Path, tmp_path_factory: pytest.TempPathFactory, env: dict[str, str] | None = None) -> Server:
    """`hayhooks run` over INDEX's live generation as the serving guide says, from an unrelated directory."""
    generation = (index / "CURRENT").read_text(encoding="utf-8").strip()
    port = free_port()
    command = [str(HAYHOOKS), "run", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--pipelines-dir", f"{index}/{generation}/hayhooks"]  # as the guide: DIR/$(cat DIR/CURRENT)/hayhooks
    log = tmp_path_factory.mktemp("hayhooks-log") / "hayhooks.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=tmp_path_factory.mktemp("cwd"),
            env={**server_env(), **(env or {})},
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = Server(process, "127.0.0.1", port, log)
    wait_until_answering(server)
    return server


def moved_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sample index in another directory."""
    index = tmp_path_factory.mktemp("moved") / "index"
    shutil.copytree(sample_index(tmp_path_factory), index)
    return index


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`hayhooks run` over a moved copy of the sample index, started from an unrelated directory; stopped after."""
    index = moved_copy(tmp_path_factory)
    before = tree(index)
    server = start_hayhooks(index, tmp_path_factory)
    try:
        yield Served(server, index, before)
    finally:
        stop(server)


def hits(served: Served, name: str, body: dict[str, object]) -> list[dict[str, object]]:
    """The documents PIPELINE answers for BODY (asserting a 200 in Hayhooks' result shape)."""
    answer = served.server.post_json(f"/{name}/run", body)
    assert answer.status == 200, (answer.status, answer.body[:500], served.server.output()[-2000:])
    documents: list[dict[str, object]] = answer.json()["result"][ANSWERING[name]]["documents"]  # type: ignore[index]
    return documents


def test_every_generated_pipeline_deploys(served: Served) -> None:
    status = served.server.request("GET", "/status").json()
    assert set(status["pipelines"]) == ALL_PIPELINES, served.server.output()[-3000:]  # type: ignore[index]


@pytest.mark.parametrize("name", sorted(ANSWERING))
def test_a_query_without_top_k_gets_the_pipelines_five_best(served: Served, name: str) -> None:
    documents = hits(served, name, {"query": QUERY})
    assert len(documents) == 5
    assert documents[0]["id"] == "zipfile-0"


@pytest.mark.parametrize("name", sorted(ANSWERING))
@pytest.mark.parametrize("top_k", [2, 12])
def test_request_top_k_sets_the_number_of_hits(served: Served, name: str, top_k: int) -> None:
    documents = hits(served, name, {"query": QUERY, "top_k": top_k})
    assert len(documents) == top_k
    assert documents[0]["id"] == "zipfile-0"


@pytest.mark.parametrize("name", sorted(ANSWERING))
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": "   "}, "query is empty"),
        ({"query": ""}, "query is empty"),
        ({"query": QUERY, "top_k": 0}, "greater than or equal to 1"),
        ({"query": QUERY, "top_k": 10_001}, "less than or equal to 10000"),
        ({"top_k": 3}, "Field required"),
    ],
)
def test_bad_input_is_a_4xx_with_a_message(served: Served, name: str, body: dict[str, object], message: str) -> None:
    answer = served.server.post_json(f"/{name}/run", body)
    assert answer.status == 422, (answer.status, answer.body[:500])
    assert message in answer.body.decode()


def test_serving_writes_nothing_into_the_index(served: Served) -> None:
    assert hits(served, "bm25_search", {"query": QUERY})  # after serving queries, too
    assert tree(served.index) == served.tree_before


def hayhooks_exit(
    index: Path, tmp_path_factory: pytest.TempPathFactory, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """(exit status, output) of `hayhooks run` over INDEX's live generation, which must end by itself."""
    generation = (index / "CURRENT").read_text(encoding="utf-8").strip()
    command = [str(HAYHOOKS), "run", "--host", "127.0.0.1", "--port", str(free_port())]
    command += ["--pipelines-dir", f"{index}/{generation}/hayhooks"]
    done = subprocess.run(
        command, check=False, cwd=tmp_path_factory.mktemp("cwd"), env={**server_env(), **(env or {})},
        capture_output=True, text=True, timeout=START_TIMEOUT_S,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_an_edited_pipeline_file_ends_hayhooks_run_naming_it(tmp_path_factory: pytest.TempPathFactory) -> None:
    index = moved_copy(tmp_path_factory)
    edited = live(index) / "hybrid_search.yaml"
    edited.write_text(edited.read_text(encoding="utf-8") + "# edited by someone else\n", encoding="utf-8")
    code, output = hayhooks_exit(index, tmp_path_factory)
    assert code == 1, output[-2000:]
    refusals = [line for line in output.splitlines() if line.startswith("needle: hayhooks cannot serve")]
    assert refusals, output[-2000:]
    assert "hybrid_search.yaml" in refusals[0]


def test_a_resealed_pipeline_file_chooses_no_code(tmp_path_factory: pytest.TempPathFactory, minilm_path: str) -> None:
    """A YAML file rewritten to load a model with its own code and trust_remote_code, its digest recomputed: the
    wrapper builds the pipeline from the manifest, so the file's parameters never run and the server answers."""
    index = moved_copy(tmp_path_factory)
    marker = tmp_path_factory.mktemp("marker") / "payload-ran"
    model = model_with_code(minilm_path, tmp_path_factory.mktemp("payload"), marker)
    yaml_file = live(index) / "dense_search.yaml"
    data = yaml.safe_load(yaml_file.read_text(encoding="utf-8"))
    data["components"]["embedder"]["init_parameters"] |= {"model": str(model), "trust_remote_code": True}
    yaml_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    reseal(yaml_file)
    server = start_hayhooks(index, tmp_path_factory)
    try:
        answer = server.post_json("/dense_search/run", {"query": QUERY})
    finally:
        stop(server)
    assert answer.status == 200
    assert not marker.exists()


def test_a_manifest_asking_for_model_code_ends_hayhooks_run_unless_allowed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    index = moved_copy(tmp_path_factory)

    def trust_code(manifest: dict) -> None:
        block = {"trust_remote_code": True}
        settings = {"model_name_or_path": manifest["model"], "backend_configs": block, "query_instruction": ""}
        settings |= {"batch_size": 32, "gpu_ids": None, "api_key": None}
        manifest["embedder"] = {"backend": "sentence_transformers", "settings": settings}

    edit_manifest(live(index) / "manifest.json", trust_code)
    code, output = hayhooks_exit(index, tmp_path_factory)
    assert code == 1, output[-2000:]
    assert "NEEDLE_TRUST_REMOTE_CODE" in output
    model = json.loads((live(index) / "manifest.json").read_text())["model"]
    server = start_hayhooks(index, tmp_path_factory, {"NEEDLE_TRUST_REMOTE_CODE": model})
    try:
        assert server.post_json("/dense_search/run", {"query": QUERY}).status == 200
    finally:
        stop(server)
