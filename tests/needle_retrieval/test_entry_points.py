"""One query with an instruction through every entry point gets the same documents, in the same order.

The index is built by `needle index --config parameter.yaml` with UltraRAG's ``query_instruction``, so the index
records it. Entry points: `needle search DIR` and `needle search --config FILE` (in-process), the Python
``Searcher``, `needle serve`'s ``POST /dense_search/run``, ``POST /search`` and the MCP tool ``retriever_search`` on
its ``/mcp``, and `hayhooks run`'s ``POST /dense_search/run``. A request that gives no instruction searches with
the recorded one; a request's (or the file's) instruction replaces it, never stacks on it: searching with the
recorded instruction given again answers as the recorded one alone, and another instruction answers as that one
alone. References embed the instruction as plain query text (instruction ``""``), so the bug of an instruction put
twice in front of the query shows as another order of the index's passages.
"""

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from needle_retrieval.cli import main
from needle_retrieval.index.trust import MODELS_VARIABLE
from needle_retrieval.search.searcher import Searcher
from tests.needle_retrieval.serve.test_hayhooks_run import start_hayhooks
from tests.support.paths import DATA, SAMPLE
from tests.support.serve import Server, start, stop

pytestmark = pytest.mark.integration
QUERY = "compress data with bz2"
RECORDED = "Represent this sentence for searching relevant passages: "
OTHER = "query: "
TOP_K = 40  # of 80 passages: a changed query vector reorders some of them


@dataclass(frozen=True)
class Built:
    """The index, the parameter file that built it, and the same file with OTHER as its instruction."""

    index: Path
    config: Path
    other_config: Path


def parameter_file(folder: Path, name: str, instruction: str) -> Path:
    """UltraRAG HEAD's example file with INSTRUCTION, the default GPU choice and this folder's corpus."""
    data = yaml.safe_load((DATA / "ultrarag_parameter.yaml").read_text(encoding="utf-8"))
    data.pop("gpu_ids")
    data["query_instruction"] = instruction
    path = folder / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module", autouse=True)
def trusted_model() -> Iterator[None]:
    """UltraRAG's example file sets ``trust_remote_code: true``, which the index records; an index chooses no code, so
    every entry point needs the user's permission. The environment variable is the one way that reaches all seven
    (``hayhooks run`` takes no flag of ours); the flags are tested in tests/needle_retrieval/index."""
    model = yaml.safe_load((DATA / "ultrarag_parameter.yaml").read_text(encoding="utf-8"))["model_name_or_path"]
    before = os.environ.get(MODELS_VARIABLE)
    os.environ[MODELS_VARIABLE] = model
    yield
    if before is None:
        os.environ.pop(MODELS_VARIABLE)
    else:
        os.environ[MODELS_VARIABLE] = before


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The project folder, the working directory of the whole module: the file's relative paths are read from the
    working directory, as UltraRAG reads them."""
    folder = tmp_path_factory.mktemp("entry-points")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        yield folder


@pytest.fixture(scope="module")
def built(folder: Path) -> Built:
    (folder / "data").mkdir()
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(True)[:80]
    (folder / "data" / "corpus_example.jsonl").write_text("".join(lines), encoding="utf-8")
    config = parameter_file(folder, "parameter.yaml", RECORDED)
    assert main(["index", "--config", str(config)]) == 0
    return Built(folder / "index" / "index.index", config, parameter_file(folder, "other.yaml", OTHER))


@dataclass(frozen=True)
class Expected:
    """The ids and passages a search with the recorded instruction and with OTHER finds."""

    recorded: list[str]
    other: list[str]
    texts: dict[str, str]  # passage text by id

    def passages(self, ids: list[str]) -> list[str]:
        return [self.texts[i] for i in ids]


@pytest.fixture(scope="module")
def expected(built: Built) -> Expected:
    """References: the instruction as plain query text, embedded with no instruction at all."""
    plain = Searcher(built.index, "dense", TOP_K, query_instruction="")
    once, twice, other = plain.search([RECORDED + QUERY, RECORDED + RECORDED + QUERY, OTHER + QUERY])
    assert ids(once) != ids(twice)  # the query makes the two visible
    texts = {d.id: d.content or "" for hits in (once, other) for d in hits}
    return Expected(ids(once), ids(other), texts)


def ids(documents: list[Any]) -> list[str]:
    """Ids of Documents, or of the JSON hits the CLI and the routes answer."""
    return [d["id"] if isinstance(d, dict) else d.id for d in documents]


def test_the_python_searcher(built: Built, expected: Expected) -> None:
    assert ids(Searcher(built.index, top_k=TOP_K).search([QUERY])[0]) == expected.recorded
    assert ids(Searcher(built.index, top_k=TOP_K, query_instruction=RECORDED).search([QUERY])[0]) == expected.recorded
    assert ids(Searcher(built.index, top_k=TOP_K, query_instruction=OTHER).search([QUERY])[0]) == expected.other


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["search", *args, "--top-k", str(TOP_K), "--json"]) == 0
    (hits,) = json.loads(capsys.readouterr().out)
    return ids(hits)


def test_needle_search(built: Built, expected: Expected, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(str(built.index), QUERY, capsys=capsys) == expected.recorded
    assert cli("--config", str(built.config), QUERY, capsys=capsys) == expected.recorded
    assert cli("--config", str(built.other_config), QUERY, capsys=capsys) == expected.other  # the file's


@pytest.fixture(scope="module")
def served(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(built.index, tmp_path_factory.mktemp("serve-log") / "server.log", pipelines={"dense_search"})
    yield server
    stop(server)


def run_route(server: Server) -> list[str]:
    answer = server.post_json("/dense_search/run", {"query": QUERY, "top_k": TOP_K})
    assert answer.status == 200, answer.body[:300]
    return ids(answer.json()["result"]["retriever"]["documents"])  # type: ignore[index]


def search_route(server: Server, instruction: str) -> list[str]:
    body = {"query_list": [QUERY], "top_k": TOP_K, "query_instruction": instruction}
    answer = server.post_json("/search", body)
    assert answer.status == 200, answer.body[:300]
    (passages,) = answer.json()["ret_psg"]  # type: ignore[index]
    return passages  # type: ignore[no-any-return]


async def retriever_search(server: Server, instructions: list[str]) -> list[list[str]]:
    """``retriever_search`` through the mcp SDK's client on the server's /mcp, once per instruction."""
    from mcp import Client

    async with Client(f"http://{server.host}:{server.port}/mcp") as client:
        answers = []
        for instruction in instructions:
            arguments = {"query_list": [QUERY], "top_k": TOP_K, "query_instruction": instruction}
            result = await client.call_tool("retriever_search", arguments)
            assert not result.is_error, result.content
            answers.append(result.structured_content["ret_psg"][0])
        return answers


def test_needle_serve_routes_and_mcp(served: Server, expected: Expected) -> None:
    assert run_route(served) == expected.recorded
    assert search_route(served, RECORDED) == expected.passages(expected.recorded)
    assert search_route(served, "") == expected.passages(expected.recorded)  # UltraRAG's default: the recorded
    assert search_route(served, OTHER) == expected.passages(expected.other)
    by_mcp = asyncio.run(retriever_search(served, [RECORDED, OTHER]))
    assert by_mcp == [expected.passages(expected.recorded), expected.passages(expected.other)]


def test_hayhooks_run(built: Built, expected: Expected, tmp_path_factory: pytest.TempPathFactory) -> None:
    server = start_hayhooks(built.index, tmp_path_factory)
    try:
        assert run_route(server) == expected.recorded
    finally:
        stop(server)
