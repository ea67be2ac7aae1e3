"""MCP on a real `needle serve`: every pipeline is a tool; the mcp SDK's client lists and calls each one, and the
answers equal the REST route's. Raw JSON-RPC checks the refusals without the SDK."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from serve_support import ALL_PIPELINES, Server, shared_server

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


def rest_ids(server: Server, name: str, query: str, top_k: int) -> list[str]:
    result = server.post_json(f"/{name}/run", {"query": query, "top_k": top_k}).json()["result"]
    (documents,) = [output["documents"] for output in result.values()]
    return [doc["id"] for doc in documents]


def sdk_python() -> str:
    """An interpreter with the mcp SDK: the Makefile's .venv-mcp (mcp cannot share .venv with zhipuai), or this one."""
    separate = REPO / ".venv-mcp" / "bin" / "python"
    if separate.exists():
        return str(separate)
    pytest.importorskip("mcp", reason="the mcp SDK client: `make .venv-mcp/.installed` (it clashes with zhipuai)")
    return sys.executable


def test_every_pipeline_is_a_tool_and_answers_as_rest_does(server: Server) -> None:
    url = f"http://{server.host}:{server.port}/mcp"
    client = subprocess.run(
        [sdk_python(), str(REPO / "tests" / "mcp_sdk_client.py"), url],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert client.returncode == 0, client.stderr[-2000:]
    report = json.loads(client.stdout)
    assert set(report["tools"]) == ALL_PIPELINES
    for name in ALL_PIPELINES:
        assert report["found"][name] == rest_ids(server, name, "read and write zip archives", 3)
    assert "422" in report["refused"]
    assert "query is empty" in report["refused"]


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
