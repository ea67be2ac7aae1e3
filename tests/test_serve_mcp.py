"""MCP on a real `needle serve`: every pipeline is a tool; the mcp SDK's client lists and calls each one, and the
answers equal the REST route's. Raw JSON-RPC checks the refusals without the SDK."""

import asyncio
import json

import pytest
from serve_support import ALL_PIPELINES, Server, shared_server

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


def rest_ids(server: Server, name: str, query: str, top_k: int) -> list[str]:
    result = server.post_json(f"/{name}/run", {"query": query, "top_k": top_k}).json()["result"]
    (documents,) = [output["documents"] for output in result.values()]
    return [doc["id"] for doc in documents]


async def with_sdk_client(url: str) -> tuple[set[str], dict[str, list[str]], str]:
    """List the tools, call each one, and call one with a blank query, through the mcp SDK's client."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        found = {}
        for name in sorted(tools):
            answer = await session.call_tool(name, {"query": "read and write zip archives", "top_k": 3})
            assert not answer.isError, answer.content
            found[name] = [hit["id"] for hit in json.loads(answer.content[0].text)["documents"]]
        refused = await session.call_tool("bm25_search", {"query": "   "})
        assert refused.isError
        return tools, found, refused.content[0].text


def test_every_pipeline_is_a_tool_and_answers_as_rest_does(server: Server) -> None:
    pytest.importorskip("mcp", reason="the mcp SDK client (pip install mcp; it clashes with zhipuai's pyjwt pin)")
    tools, found, refused = asyncio.run(with_sdk_client(f"http://{server.host}:{server.port}/mcp"))
    assert tools == ALL_PIPELINES
    for name in ALL_PIPELINES:
        assert found[name] == rest_ids(server, name, "read and write zip archives", 3)
    assert "422" in refused
    assert "query is empty" in refused


def rpc(server: Server, method: str, params: dict | None = None, request_id: int | None = 1) -> dict:
    message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})}
    if request_id is not None:
        message["id"] = request_id
    answer = server.post_json("/mcp", message)
    return {"status": answer.status, **(answer.json() if answer.body else {})}


def test_json_rpc_without_the_sdk(server: Server) -> None:
    init = rpc(server, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert rpc(server, "notifications/initialized", request_id=None) == {"status": 202}
    assert {tool["name"] for tool in rpc(server, "tools/list")["result"]["tools"]} == ALL_PIPELINES
    hits = rpc(server, "tools/call", {"name": "dense_search", "arguments": {"query": "zip", "top_k": 2}})["result"]
    assert hits["isError"] is False
    assert len(hits["structuredContent"]["documents"]) == 2


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"name": "bm25_search", "arguments": {"query": "zip", "top_k": 0}}, "top_k"),
        ({"name": "bm25_search", "arguments": {"query": "zip", "filters": {}}}, "filters"),
        ({"name": "bm25_search", "arguments": {}}, "query"),
        ({"name": "bm25_search", "arguments": {"query": "a" * ((1 << 20) + 1)}}, "413"),
    ],
)
def test_a_refused_call_is_a_tool_error_with_the_reason(server: Server, params: dict, message: str) -> None:
    result = rpc(server, "tools/call", params)["result"]
    assert result["isError"] is True
    assert message in result["content"][0]["text"]
    assert "Traceback" not in result["content"][0]["text"]


def test_protocol_errors(server: Server) -> None:
    assert rpc(server, "tools/call", {"name": "deploy_pipeline"})["error"]["code"] == -32602
    assert rpc(server, "resources/list")["error"]["code"] == -32601
    broken = server.request("POST", "/mcp", b"{", {"Content-Type": "application/json"})
    assert broken.status == 400
    assert broken.json()["error"]["code"] == -32700
