"""MCP on `needle serve` and `needle mcp`: the official SDK's server (``mcp.server.mcpserver.MCPServer``, the
FastMCP of mcp 1.x; UltraRAG's retriever server is built on its successor, the standalone FastMCP 3) with the
tools of ``needle_retrieval.serve.mcp_tools`` and ``needle_retrieval.serve.mcp_web_tools``.

``needle serve`` mounts its streamable HTTP transport at ``POST /mcp`` on the same app (stateless, JSON answers):
query tools only. ``GET /mcp`` (and ``DELETE``) is a 405 naming POST, as the MCP spec lets a server that sends no
messages of its own answer: a stateless server has no session to stream to, and the SDK's GET opened an event
stream that never ended (each holding a connection and a descriptor until the client left). The SDK checks the
protocol version header, JSON-RPC framing and, on a loopback bind, the ``Host`` and ``Origin`` headers (DNS
rebinding); on any bind an ``Origin`` other than this server's own loopback names or a ``--cors-origin`` is refused
with 403 before the SDK sees the request. ``needle mcp`` runs the same server on stdio, as an MCP host launches a
local server (``needle_retrieval.serve.mcp_stdio``).

Tools take their arguments as UltraRAG's server (FastMCP 3) takes them, not as the SDK's ``MCPServer`` does
(``RetrieverServer``): an argument the tool does not declare is refused (``additionalProperties: false`` in its
schema; the SDK ignores it), and a string is never parsed as JSON for a list or object parameter (the SDK reads
``query_list: '["a"]'`` as a list; FastMCP refuses it, as it refuses ``query_list: "a"``). Otherwise both read
arguments in pydantic's lax mode: ``top_k: "5"`` and ``5.0`` are 5, ``5.5`` and ``null`` are refused.

Nothing heavy is imported at module level: ``needle mcp`` lists its tools before the model libraries load.
"""

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import Icon, ToolAnnotations
from pydantic import ConfigDict
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from needle_retrieval.serve.mcp_tools import IndexTools, add_needle_tools, add_search_tools
from needle_retrieval.serve.mcp_web_tools import WebTools, add_web_tools

if TYPE_CHECKING:
    from needle_retrieval.serve.pipelines import ServedPipelines

SERVER_NAME = "needle-retriever"
INSTRUCTIONS = (
    "Retrieval over one needle index: UltraRAG's retriever tools (retriever_search, retriever_batch_search, "
    "retriever_project_memory_search, bm25_search, web search where configured) answer passage texts; "
    "needle_<mode>_search tools answer ids, scores and texts."
)
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


class StrictArguments(FuncMetadata):
    """A tool's argument handling as FastMCP's: the arguments are validated as sent, no string parsed as JSON."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        """The arguments unchanged (the SDK's would turn a JSON string into the list or object it spells)."""
        return data


def strict(tool: Tool) -> None:
    """Make TOOL refuse undeclared arguments and strings for lists, and say so in its input schema."""
    if isinstance(tool.fn_metadata, StrictArguments):
        return
    loose = tool.fn_metadata.arg_model
    forbid = {"model_config": ConfigDict(extra="forbid"), "__module__": __name__}
    model: type[ArgModelBase] = type(loose.__name__, (loose,), forbid)
    tool.fn_metadata = StrictArguments(
        arg_model=model,
        output_schema=tool.fn_metadata.output_schema,
        output_model=tool.fn_metadata.output_model,
        wrap_output=tool.fn_metadata.wrap_output,
    )
    tool.parameters = model.model_json_schema(by_alias=True)


class RetrieverServer(MCPServer):
    """The SDK's server whose every tool takes its arguments as UltraRAG's FastMCP tools do (``strict``)."""

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        """Register FN as ``MCPServer.add_tool`` does, then make the tool it registered strict (the SDK keeps its
        tools in ``_tool_manager`` and has no public way to add a ``Tool`` once the server is made)."""
        super().add_tool(fn, name, title, description, annotations, icons, meta, structured_output)
        tool = self._tool_manager.get_tool(name or fn.__name__)
        if tool is not None:  # always: it was just added
            strict(tool)


def mcp_server(index: IndexTools, web: WebTools | None, served: "ServedPipelines | None" = None) -> MCPServer:
    """The MCP server with the seed's query tools over INDEX, the web tools when WEB is given, and needle's own
    tools for each pipeline of SERVED (an index opened up front); tools added later are strict too."""
    server = RetrieverServer(SERVER_NAME, instructions=INSTRUCTIONS, version="1", log_level="WARNING")
    add_search_tools(server, index)
    if web is not None:
        add_web_tools(server, web)
    if served is not None:
        add_needle_tools(server, served)
    return server


def http_routes(server: MCPServer, loopback: bool, cors_origins: list[str]) -> tuple[list[Route], Any]:
    """The ``POST /mcp`` route for the FastAPI app (other methods: 405), and the lifespan that runs the SDK's session
    manager."""
    allowed = [*LOOPBACK_ORIGINS, *cors_origins] if loopback else list(cors_origins)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback, allowed_hosts=LOOPBACK_HOSTS, allowed_origins=allowed
    )
    app = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, transport_security=security
    )
    routes = [
        Route(route.path, OriginCheck(route.app, allowed), methods=["POST"])  # type: ignore[attr-defined]
        for route in app.routes
    ]
    return routes, server.session_manager.run


def with_mcp_lifespan(
    run_sessions: Callable[[], AbstractAsyncContextManager[Any]],
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """A FastAPI lifespan that keeps the SDK's session manager running while the app serves."""

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with run_sessions():
            yield

    return lifespan


class OriginCheck:
    """403 for a request whose ``Origin`` header is not allowed (a web page of another site calling /mcp)."""

    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self.app = app
        self.allowed = allowed

    def allows(self, origin: str) -> bool:
        """Exact matches, and ``scheme://host:*`` patterns for any port."""
        for pattern in self.allowed:
            if origin == pattern or (pattern.endswith(":*") and origin.startswith(pattern[:-1])):
                return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = Headers(scope=scope).get("origin")
        if origin is not None and not self.allows(origin):
            await JSONResponse({"detail": f"Origin {origin!r} is not allowed"}, 403)(scope, receive, send)
            return
        await self.app(scope, receive, send)
