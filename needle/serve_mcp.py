"""MCP on `needle serve`: every served search pipeline is a tool, at ``POST /mcp`` on the same server.

MCP's streamable HTTP transport in its stateless, JSON-answer form (no session id, no server-sent events):
each POST carries one JSON-RPC 2.0 message and gets one JSON answer, or 202 for a notification. Methods:
``initialize``, ``ping``, ``tools/list`` and ``tools/call``. It is spoken here rather than through the mcp SDK
because no release of that SDK installs beside zhipuai's pyjwt pin and pydantic >= 2.12 (see pyproject.toml);
the tests drive it with the SDK's client where it is installed.

Each tool takes ``{"query", "top_k"?}`` (the REST body, same checks) and answers ``{"documents": [{"id",
"score", "content"}, ...]}`` best first (``needle search --json``'s shape) as structured content and as JSON
text. Only the search tools are listed: no deploy, undeploy or status tool, the same query-only exposure as
the REST routes. A refused query is a tool result with ``isError`` and the REST route's message; a server
failure says only that the log has the details.
"""

import json
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from needle.index_dir import as_hits
from needle.serve_pipelines import ServedPipelines, one_line
from needle.serve_run import SearchRequest, check_request_query, run_search, validation_message

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
SERVER_INFO = {"name": "needle-search", "version": "1"}
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def search_tools(served: ServedPipelines) -> list[dict[str, Any]]:
    """One tool per served pipeline, with the REST body's JSON schema as its input schema."""
    schema = SearchRequest.model_json_schema()
    about = "Search the index with its {} pipeline; best documents first."
    return [{"name": name, "description": about.format(name), "inputSchema": schema} for name in served.plans]


async def call_search_tool(served: ServedPipelines, name: str, arguments: Any) -> dict[str, Any]:
    """Run one search tool as its REST route would: a tool result, ``isError`` with the route's message if refused."""
    if name not in served.plans:
        raise RpcError(INVALID_PARAMS, f"unknown tool {name!r}; the tools are {', '.join(served.plans)}")
    try:
        request = SearchRequest.model_validate(arguments)
        check_request_query(request.query)
        plan = served.plans[name]
        result = await run_search(name, served.registry.get(name).pipeline, plan, request.query, request.top_k)
    except ValidationError as error:
        return tool_error(validation_message(error))
    except HTTPException as error:
        return tool_error(f"{error.status_code}: {error.detail}")
    found = {"documents": as_hits(result[plan.answering]["documents"])}
    return {"content": [{"type": "text", "text": json.dumps(found)}], "structuredContent": found, "isError": False}


def tool_error(message: str) -> dict[str, Any]:
    """A tool result that reports a refusal to the model rather than failing the protocol."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


class McpEndpoint:
    """The JSON-RPC dispatcher behind ``POST /mcp``."""

    def __init__(self, served: ServedPipelines) -> None:
        self.served = served
        self.tools = search_tools(served)

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one request, or an RpcError."""
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            capabilities = {"tools": {"listChanged": False}}
            return {"protocolVersion": version, "capabilities": capabilities, "serverInfo": SERVER_INFO}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools}
        if method == "tools/call":
            name = params.get("name")
            if not isinstance(name, str):
                raise RpcError(INVALID_PARAMS, "tools/call needs params.name, a string")
            return await call_search_tool(self.served, name, params.get("arguments") or {})
        raise RpcError(METHOD_NOT_FOUND, f"method {method!r} is not served; methods: initialize, ping, tools/*")

    async def __call__(self, request: Request) -> Response:
        """One JSON-RPC message in, one answer out (202 with no body for a notification or a client's answer)."""
        try:
            message = json.loads(await request.body())
        except (ValueError, RecursionError) as error:
            return rpc_error(None, RpcError(PARSE_ERROR, f"the body is not JSON: {one_line(error)}"), 400)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return rpc_error(None, RpcError(INVALID_REQUEST, "expected one JSON-RPC 2.0 message object"), 400)
        if "method" not in message:
            return Response(status_code=202)  # a response to a server request: this server sends none
        request_id, method, params = message.get("id"), message["method"], message.get("params") or {}
        if request_id is None:
            return Response(status_code=202)  # notifications (initialized, cancelled) need no answer
        try:
            if not isinstance(method, str) or not isinstance(params, dict):
                raise RpcError(INVALID_REQUEST, "method must be a string and params an object")
            result = await self.answer(method, params)
        except RpcError as error:
            return rpc_error(request_id, error)
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result})


def rpc_error(request_id: Any, error: RpcError, status: int = 200) -> JSONResponse:
    """A JSON-RPC error object (HTTP 400 when the message itself could not be read)."""
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": error.code, "message": str(error)}}
    return JSONResponse(body, status)
