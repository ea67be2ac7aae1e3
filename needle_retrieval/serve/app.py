"""The HTTP app of `needle serve`: query endpoints only, bounded input, and a 4xx with a message for bad input.

Routes: ``POST /<name>/run`` (``{"query": ..., "top_k"?: ..., "query_instruction"?: ..., "tenant"?: ...}`` ->
``{"result": ...}``, as Hayhooks answers YAML pipelines; an instruction replaces the index's, ``""`` for none, by the
rule of ``needle_retrieval.pipelines.feed``; a tenant keeps the search to its documents,
``needle_retrieval.serve.run.request_filters``), MCP (streamable HTTP) at ``/mcp`` with UltraRAG's tools and needle's
(``needle_retrieval.serve.mcp``), UltraRAG's ``POST /search`` (``needle_retrieval.serve.ultrarag``), TEI's ``POST
/rerank``, ``GET /info`` and ``GET /health`` and the Cohere-style ``POST /v1/rerank`` with ``--reranker``
(``needle_retrieval.serve.rerank``), Hayhooks' ``GET /status`` and ``GET /status/{name}``, and FastAPI's
``/openapi.json`` and ``/docs``.
There is no deploy, undeploy, file, chat or drawing route, and no CORS header unless origins are given.

Searches run in a bounded thread pool off the event loop (``needle_retrieval.serve.run``), and at start-up everything
loaded so far (models, indexes, pipelines) is moved out of the garbage collector's view (``gc.freeze``): a full
collection would otherwise walk those millions of objects while holding the GIL, stalling every request for most of a
second whenever a large search allocates enough to trigger one.
"""

import gc
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.middleware.trustedhost import TrustedHostMiddleware
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from hayhooks.server.logger import log
from hayhooks.server.routers import status_router
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from components.checks import MAX_QUERY_CHARS
from needle_retrieval.errors import one_line
from needle_retrieval.pipelines.runner import SearchRunner
from needle_retrieval.serve.answers import BODY_ERRORS, error_responses
from needle_retrieval.serve.mcp import http_routes, with_mcp_lifespan
from needle_retrieval.serve.pipelines import ServedPipelines
from needle_retrieval.serve.rerank import RerankService, rerank_route
from needle_retrieval.serve.run import (
    INTERNAL_ERROR,
    SearchRequest,
    check_request_instruction,
    check_request_query,
    request_filters,
    run_search,
    tenant_body,
)
from needle_retrieval.serve.ultrarag import UltraRAGSearch, ultrarag_route

# Room for the longest legal query in UTF-8 (at most 4 bytes a character) plus the JSON around it.
MAX_BODY_BYTES = 4 * MAX_QUERY_CHARS + 65_536
BODY_TOO_LARGE = f"request body is larger than the limit of {MAX_BODY_BYTES:,} bytes"


class SearchResponse(BaseModel):
    """The pipeline's output, keyed by component, as Hayhooks returns it: ``result[component]["documents"]``."""

    result: dict[str, Any]


class AsciiJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped, so a message quoting a lone surrogate still encodes."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def run_route(
    app: FastAPI, name: str, runner: SearchRunner, served: ServedPipelines, body: type[SearchRequest]
) -> None:
    """Add ``POST /<name>/run`` taking BODY: check the query, run the pipeline in the search pool (on the request's
    tenant's documents when it names one, among those SERVED answers for), map errors to 4xx/500."""

    async def run(request: SearchRequest) -> SearchResponse:
        check_request_query(request.query)
        check_request_instruction(request.query_instruction)
        filters = request_filters(request.tenant, served.manifest, served.index_dir, served.tenant)
        found = await run_search(name, runner, request.query, request.top_k, request.query_instruction, filters)
        return SearchResponse(result=found)

    run.__annotations__["request"] = body  # FastAPI reads the body's schema from it (``tenant_body``)
    app.add_api_route(
        f"/{name}/run",
        run,
        methods=["POST"],
        name=f"{name}_run",
        operation_id=f"{name}_run",
        response_model=SearchResponse,
        tags=["pipelines"],
        summary=f"Search with the {name} pipeline",
        responses=error_responses({**BODY_ERRORS, 403: "the request names a tenant this server does not answer for"}),
    )


class BodyLimit:
    """ASGI middleware: 413 for a body over ``max_bytes``, at once when Content-Length says so (nothing is read),
    else as soon as the bytes received pass the limit (a chunked upload is never buffered whole)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > self.max_bytes:
            await AsciiJSONResponse({"detail": BODY_TOO_LARGE}, 413)(scope, receive, send)
            return
        received = 0

        async def receive_limited() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise HTTPException(413, BODY_TOO_LARGE)  # FastAPI re-raises it from its body read to http_error
            return message

        await self.app(scope, receive_limited, send)


async def http_error(request: Request, error: StarletteHTTPException) -> AsciiJSONResponse:
    """Every HTTP error as ``{"detail": message}``; a body FastAPI could not parse says why (bad UTF-8, depth)."""
    detail = error.detail
    if error.status_code == 400 and error.__cause__ is not None:
        detail = f"{detail}: {one_line(error.__cause__)}"
    return AsciiJSONResponse({"detail": detail}, error.status_code, error.headers)


async def validation_error(request: Request, error: RequestValidationError) -> AsciiJSONResponse:
    """FastAPI's 422 list without the echoed input, which can be megabytes or hold lone surrogates."""
    return AsciiJSONResponse({"detail": [validation_item(item) for item in error.errors()]}, 422)


def validation_item(item: dict[str, Any]) -> dict[str, Any]:
    """One validation error as type, location and message; a JSON syntax error's reason joins its message."""
    reason = (item.get("ctx") or {}).get("error")
    msg = f"{item['msg']}: {reason}" if item.get("type") == "json_invalid" and reason else item["msg"]
    return {"type": item["type"], "loc": list(item["loc"]), "msg": msg}


async def unexpected_error(request: Request, error: Exception) -> AsciiJSONResponse:
    """A last resort 500 without a traceback in the answer."""
    log.opt(exception=error).error("unhandled error on {}", request.url.path)
    return AsciiJSONResponse({"detail": INTERNAL_ERROR}, 500)


def status_routes(app: FastAPI) -> None:
    """Hayhooks' ``GET /status`` and ``GET /status/{pipeline_name}``, the latter declaring the 404 it answers for a
    name not served (Hayhooks' router declares none)."""
    for route in status_router.routes:
        assert isinstance(route, APIRoute)
        unknown = error_responses({404: "no pipeline of that name is served"}) if "{" in route.path else {}
        app.add_api_route(
            route.path,
            route.endpoint,
            methods=sorted(route.methods or ()),
            response_model=route.response_model,
            responses={**route.responses, **unknown},
            tags=list(route.tags),
            summary=route.summary,
            description=route.description,
            operation_id=route.operation_id,
            name=route.name,
        )


Lifespan = Callable[[Any], AbstractAsyncContextManager[None]]


def serving_lifespan(inner: Lifespan | None) -> Lifespan:
    """A lifespan that freezes the start-up heap (see the module docstring), then runs INNER's (MCP's sessions)."""

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        gc.freeze()
        if inner is None:
            yield
            return
        async with inner(app):
            yield

    return lifespan


def create_search_app(
    served: ServedPipelines,
    cors_origins: list[str],
    allowed_hosts: list[str] | None = None,
    ultrarag: UltraRAGSearch | None = None,
    reranker: RerankService | None = None,
    mcp: MCPServer | None = None,
) -> FastAPI:
    """The app: status, one run route per pipeline, UltraRAG's ``POST /search``, MCP at ``/mcp`` and the rerank routes
    (TEI's ``POST /rerank``, ``POST /v1/rerank``) when given, bounded bodies, and CORS only for the given origins.

    With ``allowed_hosts``, a request whose ``Host`` header names another host is refused with 400: a server on
    127.0.0.1 is then out of reach of a web page that points its own domain name at 127.0.0.1 (DNS rebinding).
    """
    mcp_routes, mcp_sessions = http_routes(mcp, bool(allowed_hosts), cors_origins) if mcp else ([], None)
    app = FastAPI(
        title="needle search",
        lifespan=serving_lifespan(with_mcp_lifespan(mcp_sessions) if mcp_sessions else None),
        description="Query-only search endpoints of one needle index.",
        exception_handlers={
            StarletteHTTPException: http_error,
            RequestValidationError: validation_error,
            Exception: unexpected_error,
        },
    )
    # What Hayhooks' status router reads; durable_mode=True is its flag for "fixed pipelines, no deployment".
    app.state.pipeline_registry = served.registry
    app.state.durable_mode = True
    app.state.durable_runtime = None
    app.state.durable_health = None
    app.state.durable_store = "memory"
    app.state.monitoring_enabled = False
    status_routes(app)
    body = tenant_body(SearchRequest, served.takes_tenant)
    for name, runner in served.runners.items():
        run_route(app, name, runner, served, body)
    app.router.routes.extend(mcp_routes)
    if ultrarag is not None:
        ultrarag_route(app, ultrarag, served)
    if reranker is not None:
        rerank_route(app, reranker)
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    if allowed_hosts:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type"],
        )
    return app
