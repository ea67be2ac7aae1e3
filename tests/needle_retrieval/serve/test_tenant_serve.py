"""Tenants on the served routes: a request's ``tenant`` on `needle serve` (REST, UltraRAG's /search, needle's MCP tools)
and on `hayhooks run`'s wrappers, and `needle serve --tenant T`, which pins the whole server to T.

One index of the sample corpus (tiny dense and SPLADE-shaped models, BM25, `--tenant-field meta.tenant`, each line
given a tenant by position), served by real processes on 127.0.0.1: a tenant's hits are exactly `needle search
--tenant`'s, a filled UltraRAG list holds that tenant's documents only, and what `needle search --tenant` refuses is a
422 naming ``tenant``. Also here: ``query_instruction`` on ``/sparse_search/run`` reaches the sparse query embedder.
"""

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from needle_retrieval.cli import main
from needle_retrieval.cli.parser import parser
from tests.needle_retrieval.serve.test_hayhooks_run import start_hayhooks
from tests.support.cli import search_json
from tests.support.paths import REPO, SAMPLE
from tests.support.serve import (
    Server,
    free_port,
    needle_command,
    sample_index,
    server_env,
    shared_server,
    start,
    stop,
)
from tests.support.tiny_splade import tiny_splade_path

pytestmark = pytest.mark.integration
TENANTS = ("acme", "globex", "initech")
QUERY = "read and write ZIP files"
MODES = ("dense", "bm25", "sparse", "hybrid", "rrf")
PIPELINES = {f"{mode}_search" for mode in MODES}
REFUSED = ["", "   ", "a\x01b", "2024-01-01", "x" * 1025]  # what `needle search --tenant` refuses


@pytest.fixture(scope="module")
def owner() -> dict[str, str]:
    """The tenant of each sample document id (by corpus position) and of each passage text."""
    lines = [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines() if line.strip()]
    ids = {line["id"]: TENANTS[number % len(TENANTS)] for number, line in enumerate(lines)}
    texts = {f"{line['title']}\n{line['contents']}": ids[line["id"]] for line in lines}
    return {**ids, **texts}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, owner: dict[str, str], tiny_model: str, minilm_path: str) -> Path:
    """Dense + BM25 + sparse, tenant field meta.tenant."""
    root = tmp_path_factory.mktemp("tenant-serve")
    corpus = root / "corpus.jsonl"
    lines = [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines() if line.strip()]
    corpus.write_text("".join(json.dumps({**line, "tenant": owner[line["id"]]}) + "\n" for line in lines), "utf-8")
    argv = ["index", str(corpus), "--out", str(root / "index"), "--model", tiny_model, "--bm25"]
    argv += ["--sparse", tiny_splade_path(minilm_path), "--tenant-field", "meta.tenant"]
    assert main(argv) == 0
    return root / "index"


@pytest.fixture(scope="module")
def server(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start(index, tmp_path_factory.mktemp("log") / "serve.log", pipelines=PIPELINES)
    yield running
    stop(running)


@pytest.fixture(scope="module")
def pinned(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`needle serve INDEX --tenant globex`."""
    running = start(index, tmp_path_factory.mktemp("log") / "pinned.log", "--tenant", "globex", pipelines=PIPELINES)
    yield running
    stop(running)


def run_hits(server: Server, mode: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The documents ``POST /<mode>_search/run`` answers for BODY (asserting a 200)."""
    answer = server.post_json(f"/{mode}_search/run", body)
    assert answer.status == 200, answer.body[:500]
    (documents,) = [output["documents"] for output in answer.json()["result"].values()]  # type: ignore[union-attr]
    return documents


def pairs(hits: list[dict[str, Any]]) -> list[tuple[str, float]]:
    return [(str(hit["id"]), pytest.approx(float(hit["score"]), rel=1e-4)) for hit in hits]


def detail(server: Server, path: str, body: dict[str, Any]) -> tuple[int, str]:
    answer = server.post_json(path, body)
    return answer.status, str(answer.json()["detail"])  # type: ignore[index]


@pytest.mark.parametrize("mode", MODES)
def test_a_request_tenant_answers_as_needle_search_tenant(
    server: Server, index: Path, owner: dict[str, str], mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = run_hits(server, mode, {"query": QUERY, "top_k": 5, "tenant": "globex"})
    (expected,) = search_json(capsys, str(index), QUERY, "--mode", mode, "--top-k", "5", "--tenant", "globex")
    assert len(mine) == 5
    assert pairs(mine) == pairs(expected)
    assert {owner[hit["id"]] for hit in mine} == {"globex"}
    assert {owner[hit["id"]] for hit in run_hits(server, mode, {"query": QUERY, "top_k": 20})} != {"globex"}


@pytest.mark.parametrize("tenant", REFUSED)
def test_a_tenant_needle_search_refuses_is_a_422_naming_tenant(server: Server, tenant: str) -> None:
    status, message = detail(server, "/dense_search/run", {"query": QUERY, "tenant": tenant})
    assert (status, message.split(":")[0]) == (422, "tenant")


def test_an_index_without_a_tenant_field_refuses_a_tenant_saying_how_to_build_one(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    plain = shared_server(request, tmp_path_factory)  # the sample index: no tenant field
    status, message = detail(plain, "/bm25_search/run", {"query": QUERY, "tenant": "acme"})
    assert status == 422
    assert "--tenant-field meta.KEY" in message
    assert detail(plain, "/search", {"query_list": [QUERY], "tenant": "acme"})[0] == 422


def tenant_schemas(server: Server) -> list[dict[str, Any]]:
    """The schema of ``tenant`` in each request body of SERVER's /openapi.json."""
    bodies = server.request("GET", "/openapi.json").json()["components"]["schemas"]  # type: ignore[index]
    return [body["properties"]["tenant"] for body in bodies.values() if "tenant" in body.get("properties", {})]


def test_openapi_offers_a_tenant_only_where_the_index_takes_one(
    server: Server, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    offered = tenant_schemas(server)  # SearchRequest and UltraRAGSearchRequest
    assert len(offered) == 2
    assert all(schema["anyOf"][0]["maxLength"] == 1024 for schema in offered)
    plain = shared_server(request, tmp_path_factory)
    assert [schema["type"] for schema in tenant_schemas(plain)] == ["null", "null"]


def test_search_takes_a_tenant_and_fills_short_lists_from_its_documents_only(
    server: Server, owner: dict[str, str]
) -> None:
    body = {"query_list": [QUERY, "the of and is it"], "top_k": 120, "tenant": "acme"}  # more than acme has
    answer = server.post_json("/search", body)
    assert answer.status == 200, answer.body[:300]
    assert {owner[text] for passages in answer.json()["ret_psg"] for text in passages} == {"acme"}  # type: ignore[index]


async def needle_tool(server: Server, name: str, arguments: dict[str, Any]) -> Any:
    """One call of a needle MCP tool: its structured answer, or its error text."""
    from mcp import Client

    async with Client(f"http://{server.host}:{server.port}/mcp") as client:
        result = await client.call_tool(name, arguments)
        return result.content[0].text if result.is_error else result.structured_content


def test_needle_mcp_tools_take_a_tenant(server: Server) -> None:
    arguments = {"query": QUERY, "top_k": 5, "tenant": "initech"}
    found = asyncio.run(needle_tool(server, "needle_bm25_search", arguments))
    assert pairs(found["documents"]) == pairs(run_hits(server, "bm25", arguments))
    refused = asyncio.run(needle_tool(server, "needle_bm25_search", {"query": QUERY, "tenant": "2024-01-01"}))
    assert ": 422: tenant: a tenant may not start like a date" in refused


def test_a_pinned_server_answers_for_its_tenant_only(pinned: Server, server: Server, owner: dict[str, str]) -> None:
    for mode in ("dense", "hybrid"):
        expected = pairs(run_hits(server, mode, {"query": QUERY, "tenant": "globex"}))
        assert pairs(run_hits(pinned, mode, {"query": QUERY})) == expected
        assert pairs(run_hits(pinned, mode, {"query": QUERY, "tenant": "globex"})) == expected
        assert detail(pinned, f"/{mode}_search/run", {"query": QUERY, "tenant": "acme"})[0] == 403
    answer = pinned.post_json("/search", {"query_list": [QUERY], "top_k": 120})
    assert {owner[text] for text in answer.json()["ret_psg"][0]} == {"globex"}  # type: ignore[index]
    assert detail(pinned, "/search", {"query_list": [QUERY], "tenant": "acme"})[0] == 403
    found = asyncio.run(needle_tool(pinned, "retriever_search", {"query_list": [QUERY], "top_k": 120}))
    assert {owner[text] for text in found["ret_psg"][0]} == {"globex"}
    refused = asyncio.run(needle_tool(pinned, "needle_dense_search", {"query": QUERY, "tenant": "acme"}))
    assert ": 403: tenant 'acme' is not served here" in refused


def test_serve_tenant_on_an_index_without_a_tenant_field_stops_at_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    plain = sample_index(tmp_path_factory)
    command = needle_command("serve", str(plain), "--port", str(free_port()), "--tenant", "acme")
    done = subprocess.run(command, check=False, cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "records no tenant field" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_serve_help_shows_tenant_and_refuses_a_bad_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "--help"])
    assert "--tenant T" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "IX", "--tenant", "2024-01-01"])


def test_a_sparse_request_instruction_reaches_the_sparse_query_embedder(
    server: Server, index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instructed = run_hits(server, "sparse", {"query": QUERY, "top_k": 5, "query_instruction": "query: "})
    assert pairs(instructed) != pairs(run_hits(server, "sparse", {"query": QUERY, "top_k": 5}))
    argv = ("--mode", "sparse", "--top-k", "5", "--query-instruction", "query: ")
    assert pairs(instructed) == pairs(search_json(capsys, str(index), QUERY, *argv)[0])


def test_hayhooks_wrappers_take_a_tenant(
    index: Path, tmp_path_factory: pytest.TempPathFactory, server: Server, owner: dict[str, str]
) -> None:
    hayhooks = start_hayhooks(index, tmp_path_factory)
    try:
        for mode in ("bm25", "dense"):
            body = {"query": QUERY, "top_k": 5, "tenant": "acme"}
            assert pairs(run_hits(hayhooks, mode, body)) == pairs(run_hits(server, mode, body))
        assert detail(hayhooks, "/bm25_search/run", {"query": QUERY, "tenant": ""})[0] == 422
    finally:
        stop(hayhooks)
