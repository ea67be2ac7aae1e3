"""MCP on a real `needle serve`: UltraRAG's tool names and shapes, driven by the mcp SDK's client and fastmcp's.

The seed's ``retriever_search`` answers exactly what ``POST /search`` answers, ``bm25_search`` what the BM25
route finds, each filled to ``top_k`` passages from the corpus's first lines when the search finds fewer, as
UltraRAG's; needle's own ``needle_<mode>_search`` tools the REST routes' ids. Raw HTTP checks what the SDK's
transport refuses: another site's ``Origin``, an unknown protocol version, a body that is not JSON.
"""

import asyncio
import json
from typing import Any

import pytest

from tests.support.paths import SAMPLE
from tests.support.serve import ALL_PIPELINES, Server, shared_server, started

pytestmark = pytest.mark.integration
QUERIES = ["read and write zip archives", "run a function in a separate thread"]
SEED_TOOLS = {"retriever_search", "retriever_batch_search", "retriever_project_memory_search", "bm25_search"}
CORPUS = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
TEXTS = [f"{line['title']}\n{line['contents']}" for line in CORPUS]  # the passages `needle index` stores
STOPWORDS = "the of and is it"  # BM25 finds nothing for it
NEEDLE_TOOLS = {f"needle_{name}" for name in ALL_PIPELINES}
WEB_TOOLS = {"retriever_websearch", "retriever_batch_websearch"}


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


def url(server: Server) -> str:
    return f"http://{server.host}:{server.port}/mcp"


async def sdk_calls(address: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    """The tool names the server lists, and each call's structured answer (or its error text)."""
    from mcp import Client

    async with Client(address) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        answers = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            answers.append(result.content[0].text if result.is_error else result.structured_content)
        return names, answers


def passages(server: Server, queries: list[str], top_k: int, **extra: Any) -> list[list[str]]:
    answer = server.post_json("/search", {"query_list": queries, "top_k": top_k, **extra})
    assert answer.status == 200, answer.body[:300]
    return answer.json()["ret_psg"]  # type: ignore[index]


def rest_hits(server: Server, name: str, query: str, top_k: int) -> list[dict[str, Any]]:
    result = server.post_json(f"/{name}/run", {"query": query, "top_k": top_k}).json()["result"]  # type: ignore[index]
    (documents,) = [output["documents"] for output in result.values()]
    return documents


def test_the_sdk_client_lists_the_seed_tools_and_needles_own(server: Server) -> None:
    names, _ = asyncio.run(sdk_calls(url(server), []))
    assert names >= SEED_TOOLS | NEEDLE_TOOLS
    assert "retriever_deploy_search" not in names  # it fetches a URL the caller names: off unless enabled
    assert not names & {"retriever_index", "retriever_init", "bm25_index", "retriever_embed"}  # stdio only
    assert not names & WEB_TOOLS  # no provider key in this server's environment


def test_seed_tools_answer_what_post_search_answers(server: Server) -> None:
    calls = [
        ("retriever_search", {"query_list": QUERIES, "top_k": 3}),
        ("retriever_search", {"query_list": QUERIES[:1]}),  # top_k defaults to 5
        ("retriever_batch_search", {"batch_query_list": [QUERIES, [], [QUERIES[1]]], "top_k": 2}),
        ("retriever_search", {"query_list": QUERIES, "top_k": 3, "query_instruction": "Represent this: "}),
    ]
    _, (three, default, batch, instructed) = asyncio.run(sdk_calls(url(server), calls))
    assert three == {"ret_psg": passages(server, QUERIES, 3)}
    assert three["ret_psg"][0][0].startswith("zipfile")
    assert default == {"ret_psg": passages(server, QUERIES[:1], 5)}
    two = passages(server, QUERIES, 2)
    assert batch == {"ret_psg_ls": [two, [], two[1:]]}
    assert instructed == {"ret_psg": passages(server, QUERIES, 3, query_instruction="Represent this: ")}


def test_bm25_search_takes_the_seeds_query_list_and_answers_passages(server: Server) -> None:
    _, (found,) = asyncio.run(sdk_calls(url(server), [("bm25_search", {"query_list": QUERIES, "top_k": 3})]))
    expected = [[hit["content"] for hit in rest_hits(server, "bm25_search", query, 3)] for query in QUERIES]
    assert found == {"ret_psg": expected}


def test_needle_tools_answer_ids_scores_and_text_as_the_rest_routes(server: Server) -> None:
    calls = [(f"needle_{name}", {"query": QUERIES[0], "top_k": 3}) for name in sorted(ALL_PIPELINES)]
    _, answers = asyncio.run(sdk_calls(url(server), calls))
    for name, answer in zip(sorted(ALL_PIPELINES), answers, strict=True):
        expected = rest_hits(server, name, QUERIES[0], 3)
        assert [hit["id"] for hit in answer["documents"]] == [hit["id"] for hit in expected]
        assert set(answer["documents"][0]) == {"id", "score", "content"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query_list": ["   "]}, "query_list[0] is empty"),
        ({"query_list": []}, "query_list is empty"),
        ({"query_list": ["zip"], "top_k": 0}, "top_k"),
        ({"query_list": "zip"}, "Input should be a valid list"),  # as UltraRAG's FastMCP server refuses it
        ({"query_list": ["zip"], "bogus": 1}, "Extra inputs are not permitted"),
        ({"query_list": ["a" * ((1 << 20) + 1)]}, "413"),
    ],
)
def test_a_refused_call_is_a_tool_error_with_the_reason(server: Server, arguments: dict, message: str) -> None:
    _, (text,) = asyncio.run(sdk_calls(url(server), [("retriever_search", arguments)]))
    assert isinstance(text, str)
    assert message in text
    assert "Traceback" not in text


def test_bm25_search_answers_top_k_passages_when_nothing_matches(server: Server) -> None:
    """UltraRAG's prompt templates index into top_k passages: a stopword query gets the corpus's first ones."""
    calls = [
        ("bm25_search", {"query_list": [STOPWORDS, QUERIES[0]], "top_k": 3}),
        ("bm25_search", {"query_list": [STOPWORDS], "top_k": 500}),
    ]
    _, (three, everything) = asyncio.run(sdk_calls(url(server), calls))
    assert three["ret_psg"][0] == TEXTS[:3]
    assert three["ret_psg"][1] == [hit["content"] for hit in rest_hits(server, "bm25_search", QUERIES[0], 3)]
    assert everything["ret_psg"] == [TEXTS]  # top_k past the corpus: all of it, in corpus order


def test_a_short_bm25_list_is_filled_after_its_hits_without_repeats(server: Server) -> None:
    hits = rest_hits(server, "bm25_search", "zipfile", 20)
    assert 0 < len(hits) < 20
    found = {hit["id"] for hit in hits}
    filler = [text for line, text in zip(CORPUS, TEXTS, strict=True) if line["id"] not in found][: 20 - len(hits)]
    _, (answer,) = asyncio.run(sdk_calls(url(server), [("bm25_search", {"query_list": ["zipfile"], "top_k": 20})]))
    assert answer == {"ret_psg": [[hit["content"] for hit in hits] + filler]}


def test_project_memory_and_any_collection_search_a_faiss_index_as_retriever_search(server: Server) -> None:
    """UltraRAG's FAISS backend ignores the collection: user_<id> for project memory, `wiki` in its examples."""
    calls = [
        ("retriever_project_memory_search", {"query_list": QUERIES, "top_k": 3}),
        ("retriever_project_memory_search", {"query_list": QUERIES, "top_k": 3, "current_user_id": "alice"}),
        ("retriever_search", {"query_list": QUERIES, "top_k": 3, "collection_name": "wiki"}),
    ]
    _, (default, alice, wiki) = asyncio.run(sdk_calls(url(server), calls))
    expected = passages(server, QUERIES, 3)
    assert default == alice == {"project_memory_content": expected}
    assert wiki == {"ret_psg": expected}


def test_fastmcp_client_calls_the_seed_tool(server: Server) -> None:
    fastmcp = pytest.importorskip("fastmcp")

    async def call() -> tuple[set[str], Any]:
        async with fastmcp.Client(url(server)) as client:
            names = {tool.name for tool in await client.list_tools()}
            return names, (await client.call_tool("retriever_search", {"query_list": QUERIES, "top_k": 2})).data

    names, data = asyncio.run(call())
    assert names >= SEED_TOOLS
    ret_psg = data["ret_psg"] if isinstance(data, dict) else data.ret_psg
    assert ret_psg == passages(server, QUERIES, 2)


def rpc(server: Server, message: object, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    base = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    answer = server.post_json("/mcp", message, {**base, **(headers or {})})
    return answer.status, (json.loads(answer.body) if answer.body else None)


def call_message(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def test_raw_json_rpc_call(server: Server) -> None:
    status, body = rpc(server, call_message("retriever_search", {"query_list": QUERIES[:1], "top_k": 1}))
    assert status == 200
    assert body["result"]["structuredContent"] == {"ret_psg": passages(server, QUERIES[:1], 1)}


def test_another_sites_origin_is_refused(server: Server) -> None:
    message = call_message("retriever_search", {"query_list": ["zip"]})
    status, _ = rpc(server, message, {"Origin": "http://evil.test"})
    assert status == 403
    ok, _ = rpc(server, message, {"Origin": url(server)[:-4]})
    assert ok == 200


def test_an_unknown_protocol_version_and_a_broken_body_are_refused(server: Server) -> None:
    status, _ = rpc(
        server, call_message("bm25_search", {"query_list": ["zip"]}), {"MCP-Protocol-Version": "1999-01-01"}
    )
    assert status == 400
    broken = server.request(
        "POST", "/mcp", b"{", {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    )
    assert broken.status == 400
    unknown_status, unknown = rpc(server, call_message("retriever_index", {}))
    assert unknown_status == 200
    assert unknown["result"]["isError"] is True or "error" in unknown


def test_deploy_search_is_listed_when_enabled_and_calls_the_server_it_names(
    tmp_path_factory: pytest.TempPathFactory, server: Server
) -> None:
    from tests.support.serve import sample_index

    log = tmp_path_factory.mktemp("deploy-log") / "server.log"
    with started(sample_index(tmp_path_factory), log, "--allow-deploy-search") as enabled:
        calls = [("retriever_deploy_search", {"retriever_url": f"{server.host}:{server.port}", "query_list": QUERIES})]
        names, (found,) = asyncio.run(sdk_calls(url(enabled), calls))
    assert "retriever_deploy_search" in names
    assert found == {"ret_psg": passages(server, QUERIES, 5)}
