"""One query, one instruction rule, every entry point: the same hits wherever the query comes in.

One small index (80 passages of the sample corpus, MiniLM from the local cache) is built once for the module by
`needle index --config parameter.yaml` with UltraRAG's ``query_instruction``, so the index records an instruction.
The same query is then sent through `needle search` (``--query-instruction``), the Python ``Searcher``, the saved
pipeline file loaded with Haystack's ``Pipeline.loads``, `needle serve`'s ``POST /dense_search/run``, ``POST
/search``, the MCP tools ``needle_dense_search`` and ``retriever_search`` on its ``/mcp``, and `hayhooks run`'s
``POST /dense_search/run``, and each answers what the instruction it was given means
(``needle_retrieval.pipelines.feed``): left out, the recorded one; another text, that one in its place; ``""``, none
at needle's own entry points, and the recorded one on UltraRAG's face (``POST /search``, ``retriever_search``, a
parameter file's key), where ``""`` is the value a client sends when it gives none.

References embed the instruction as plain query text with no instruction at all, and the three references differ,
so an instruction that is dropped, kept when it should be replaced, or put twice shows as another order.
"""

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Pipeline

from needle_retrieval.cli import main
from needle_retrieval.search.searcher import Searcher
from tests.needle_retrieval.serve.test_hayhooks_run import start_hayhooks
from tests.support.paths import DATA, SAMPLE
from tests.support.serve import Server, start, stop

pytestmark = pytest.mark.integration
QUERY = "compress data with bz2"
RECORDED = "Represent this sentence for searching relevant passages: "
OTHER = "query: "
TOP_K = 40  # of 80 passages: a changed query vector reorders some of them
Ask = str | None  # the instruction a request gives; None: it leaves the field out


@dataclass(frozen=True)
class Built:
    """The index and the parameter file that built it."""

    index: Path
    config: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """UltraRAG's example file with RECORDED as its instruction and no model code to trust, over 80 passages; the
    project folder is the working directory while the file's relative paths are read, as UltraRAG reads them."""
    folder = tmp_path_factory.mktemp("one-instruction")
    (folder / "data").mkdir()
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(True)[:80]
    (folder / "data" / "corpus_example.jsonl").write_text("".join(lines), encoding="utf-8")
    data = yaml.safe_load((DATA / "ultrarag_parameter.yaml").read_text(encoding="utf-8"))
    data.pop("gpu_ids")
    data["query_instruction"] = RECORDED
    data["backend_configs"]["sentence_transformers"]["trust_remote_code"] = False
    config = folder / "parameter.yaml"
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["index", "--config", str(config)]) == 0
        yield Built(folder / "index" / "index.index", config)


@dataclass(frozen=True)
class Expected:
    """The ids a search finds with the recorded instruction, with OTHER, and with none; passage texts by id."""

    by_instruction: dict[str, list[str]]  # RECORDED, OTHER and "" -> ids
    texts: dict[str, str]

    def ids(self, instruction: str) -> list[str]:
        return self.by_instruction[instruction]

    def passages(self, instruction: str) -> list[str]:
        return [self.texts[i] for i in self.by_instruction[instruction]]


@pytest.fixture(scope="module")
def expected(built: Built) -> Expected:
    """References: each instruction as plain query text, embedded with no instruction at all."""
    plain = Searcher(built.index, "dense", TOP_K, query_instruction="")
    found = plain.search([RECORDED + QUERY, OTHER + QUERY, QUERY])
    by_instruction = {instruction: ids(hits) for instruction, hits in zip((RECORDED, OTHER, ""), found, strict=True)}
    assert len({tuple(order) for order in by_instruction.values()}) == 3  # the query makes every mistake visible
    return Expected(by_instruction, {d.id: d.content or "" for hits in found for d in hits})


def ids(documents: list[Any]) -> list[str]:
    """Ids of Documents, or of the JSON hits the CLI and the routes answer."""
    return [d["id"] if isinstance(d, dict) else d.id for d in documents]


# needle's own rule: left out -> the recorded instruction, "" -> none, another text -> that one.
NEEDLE_RULE: list[tuple[Ask, str]] = [(None, RECORDED), ("", ""), (OTHER, OTHER)]
# UltraRAG's face: "" is what a client sends when it gives none -> the recorded one.
ULTRARAG_RULE: list[tuple[str, str]] = [("", RECORDED), (OTHER, OTHER)]


def test_the_python_searcher(built: Built, expected: Expected) -> None:
    for ask, meaning in NEEDLE_RULE:
        assert ids(Searcher(built.index, top_k=TOP_K, query_instruction=ask).search([QUERY])[0]) == expected.ids(
            meaning
        )


def search_cli(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    assert main(["search", *args, "--top-k", str(TOP_K), "--json"]) == 0
    (hits,) = json.loads(capsys.readouterr().out)
    return ids(hits)


def test_needle_search_flag_and_config(built: Built, expected: Expected, capsys: pytest.CaptureFixture[str]) -> None:
    for ask, meaning in NEEDLE_RULE:
        flag = [] if ask is None else ["--query-instruction", ask]
        assert search_cli(capsys, str(built.index), QUERY, *flag) == expected.ids(meaning), ask
    config = ["--config", str(built.config), QUERY]
    assert search_cli(capsys, *config) == expected.ids(RECORDED)  # the file's instruction
    assert search_cli(capsys, *config, "--query-instruction", "") == expected.ids("")  # the flag beats the file
    assert search_cli(capsys, *config, "--query-instruction", OTHER) == expected.ids(OTHER)


def test_the_saved_pipeline_loaded_with_haystack(
    built: Built, expected: Expected, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generation's dense_search.yaml, as a user loads it (its paths are relative to the index directory)."""
    generation = (built.index / "CURRENT").read_text(encoding="utf-8").strip()
    pipeline = Pipeline.loads((built.index / generation / "dense_search.yaml").read_text(encoding="utf-8"))
    monkeypatch.chdir(built.index)
    for ask, meaning in NEEDLE_RULE:
        given = {} if ask is None else {"query_instruction": ask}
        answer = pipeline.run({"embedder": {"text": QUERY, **given}, "retriever": {"top_k": TOP_K}})
        assert ids(answer["retriever"]["documents"]) == expected.ids(meaning), ask


@pytest.fixture(scope="module")
def served(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(built.index, tmp_path_factory.mktemp("serve-log") / "server.log", pipelines={"dense_search"})
    yield server
    stop(server)


def run_route(server: Server, ask: Ask) -> list[str]:
    body: dict[str, Any] = {"query": QUERY, "top_k": TOP_K}
    if ask is not None:
        body["query_instruction"] = ask
    answer = server.post_json("/dense_search/run", body)
    assert answer.status == 200, answer.body[:300]
    return ids(answer.json()["result"]["retriever"]["documents"])  # type: ignore[index]


def search_route(server: Server, ask: str) -> list[str]:
    answer = server.post_json("/search", {"query_list": [QUERY], "top_k": TOP_K, "query_instruction": ask})
    assert answer.status == 200, answer.body[:300]
    (passages,) = answer.json()["ret_psg"]  # type: ignore[index]
    return passages  # type: ignore[no-any-return]


async def mcp_calls(server: Server) -> tuple[list[list[str]], list[list[str]]]:
    """``needle_dense_search`` by needle's rule and ``retriever_search`` by UltraRAG's, through the mcp SDK's
    client on the server's /mcp."""
    from mcp import Client

    async with Client(f"http://{server.host}:{server.port}/mcp") as client:
        needle, ultrarag = [], []
        for ask, _ in NEEDLE_RULE:
            given = {} if ask is None else {"query_instruction": ask}
            result = await client.call_tool("needle_dense_search", {"query": QUERY, "top_k": TOP_K, **given})
            assert not result.is_error, result.content
            needle.append(ids(result.structured_content["documents"]))
        for text, _ in ULTRARAG_RULE:
            arguments = {"query_list": [QUERY], "top_k": TOP_K, "query_instruction": text}
            result = await client.call_tool("retriever_search", arguments)
            assert not result.is_error, result.content
            ultrarag.append(result.structured_content["ret_psg"][0])
        return needle, ultrarag


def test_needle_serve_routes_and_mcp_tools(served: Server, expected: Expected) -> None:
    for ask, meaning in NEEDLE_RULE:
        assert run_route(served, ask) == expected.ids(meaning), ask
    for text, meaning in ULTRARAG_RULE:
        assert search_route(served, text) == expected.passages(meaning), text
    needle, ultrarag = asyncio.run(mcp_calls(served))
    assert needle == [expected.ids(meaning) for _, meaning in NEEDLE_RULE]
    assert ultrarag == [expected.passages(meaning) for _, meaning in ULTRARAG_RULE]


def test_a_bad_instruction_is_a_422_naming_the_field(served: Server) -> None:
    answer = served.post_json("/dense_search/run", {"query": QUERY, "query_instruction": "\ud800"})
    assert answer.status == 422
    assert "query_instruction" in answer.body.decode()


def test_hayhooks_run(built: Built, expected: Expected, tmp_path_factory: pytest.TempPathFactory) -> None:
    server = start_hayhooks(built.index, tmp_path_factory)
    try:
        for ask, meaning in NEEDLE_RULE:
            assert run_route(server, ask) == expected.ids(meaning), ask
    finally:
        stop(server)
