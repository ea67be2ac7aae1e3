"""`needle serve`: an index's search pipelines over HTTP, in this process, with Hayhooks' registry and runner.

The app is built here rather than by ``hayhooks run``, whose app also mounts deploy, undeploy, file and chat
routes and allows every CORS origin; see ``needle_retrieval.serve.app`` for what this one exposes. Pipelines come from
memory (``needle_retrieval.serve.pipelines``), so nothing is read from or written to pipeline files in the index.

The port is taken first: ``listen`` binds and listens on HOST:PORT before anything heavy is imported or loaded,
so a port in use is one line at once rather than an exit after the models loaded, and uvicorn then serves
those very sockets, so no other process can take the port while the pipelines load. Connections made meanwhile
wait in the listen backlog and are answered once the server is up.
"""

import errno
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from needle_retrieval.errors import NeedleError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from needle_retrieval.index.trust import Trust
    from needle_retrieval.pipelines.fusion import FusionSetting

# Hayhooks saves deployed YAML under settings.pipelines_dir; no route here deploys, and should anything try, this
# path cannot be created (its parent is a device, not a directory).
NO_PIPELINES_DIR = "/dev/null/needle-serve-deploys-nothing"
# Host names a browser uses for a server bound to this machine only; any other Host header is refused there.
LOOPBACK_NAMES = ["127.0.0.1", "localhost"]
BACKLOG = 2048  # uvicorn's default listen backlog
Address = tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]  # as socket.getaddrinfo gives them


def serve(
    index_dir: Path,
    host: str,
    port: int,
    cors_origins: list[str],
    reranker: str | None = None,
    reranker_max_batch: int | None = None,
    deploy_search: bool = False,
    fusion: "FusionSetting | None" = None,
    trust: "Trust | None" = None,
    ultrarag_mode: str | None = None,
    tenant: str | None = None,
) -> None:
    """Take HOST:PORT, deploy every search pipeline INDEX_DIR supports (REST, MCP and UltraRAG's /search), and
    TEI's /rerank (with the Cohere-style /v1/rerank) over the cross-encoder directory RERANKER when given (at most
    RERANKER_MAX_BATCH texts a request; None: TEI's default); then answer queries until interrupted. MCP lists the
    web search tools for the providers whose key variable is set, and ``retriever_deploy_search`` with
    DEPLOY_SEARCH. Every pipeline fuses with FUSION (``needle serve --fusion``; None: the index's own), which the
    start-up line names, and may use what TRUST allows (``needle_retrieval.index.trust``; None: what the NEEDLE_*
    variables allow). UltraRAG's /search and MCP ``retriever_search`` answer in ULTRARAG_MODE (``needle serve
    --ultrarag-mode``; None: the dense part, as UltraRAG's own, else BM25). With TENANT (``needle serve --tenant``)
    every route and tool searches that tenant's documents only and refuses a request naming another tenant; None:
    every document, or the tenant a request names.

    Raises NeedleError (one line, exit 2 from the CLI) when the port is in use (before anything loads), the index
    is missing or lacks ULTRARAG_MODE's parts or (with TENANT) a tenant field, any pipeline fails to deploy or the
    reranker fails to load.
    """
    sockets = listen(host, port)
    try:
        if tenant is not None:
            check_tenant_field(index_dir, tenant)
        app, names, used = search_app(
            index_dir, host, cors_origins, reranker, reranker_max_batch, deploy_search, fusion, trust, ultrarag_mode,
            tenant,
        )  # fmt: skip
        whose = "" if tenant is None else f"; tenant {tenant!r} only"
        print(
            f"needle serve: {names} from {index_dir} on http://{host}:{port}; fusion {used.describe()}{whose}",
            flush=True,
        )
        run(app, host, port, sockets)
    finally:
        for sock in sockets:
            sock.close()


def check_tenant_field(index_dir: Path, tenant: str) -> None:
    """Refuse `needle serve --tenant` on an index that records no tenant field, saying how to build one, as `needle
    search --tenant` does, before Hayhooks and the models are imported."""
    from needle_retrieval.index.manifest import IndexManifest
    from needle_retrieval.search.inputs import tenant_filters

    tenant_filters(IndexManifest.load(index_dir), tenant, index_dir)


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address HOST resolves to (all interfaces for ""), bound as uvicorn binds them.

    Like asyncio's ``create_server`` that uvicorn calls: SO_REUSEADDR (so a restart is not refused for the last
    run's connections in TIME_WAIT; a port another socket *listens* on is still refused, with or without that
    option) and IPv6 sockets for IPv6 only. Listening at once claims the port: two sockets bound with
    SO_REUSEADDR may share a port until one listens.

    :raises NeedleError: the port is in use, or HOST cannot be resolved or bound (naming HOST:PORT).
    """
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise NeedleError(f"cannot listen on {shown}: {error.strerror}") from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):  # unique addresses, in resolver order
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:
                continue  # a family this machine lacks (IPv6 off): asyncio skips it too
            sockets.append(listening(sock, address))
        if not sockets:
            raise OSError(errno.EAFNOSUPPORT, "no address of it can be bound here")
    except OSError as error:
        for sock in sockets:
            sock.close()
        if error.errno == errno.EADDRINUSE:
            raise NeedleError(
                f"{shown} is in use: another server listens there; stop it or choose another --port"
            ) from None
        raise NeedleError(f"cannot listen on {shown}: {error.strerror or error}") from None
    return sockets


def listening(sock: socket.socket, address: Address) -> socket.socket:
    """SOCK bound to ADDRESS and listening (closed if either fails)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if sock.family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def search_app(
    index_dir: Path,
    host: str,
    cors_origins: list[str],
    reranker: str | None,
    reranker_max_batch: int | None,
    deploy_search: bool,
    fusion: "FusionSetting | None" = None,
    trust: "Trust | None" = None,
    ultrarag_mode: str | None = None,
    tenant: str | None = None,
) -> tuple["FastAPI", str, "FusionSetting"]:
    """Deploy the pipelines and build the app (see ``serve``); returns it, the names of what it serves and the
    fusion setting its pipelines carry.

    Hayhooks, the pipelines and the models are imported here, after the port is taken, not when this module is.
    """
    from hayhooks.settings import settings

    from needle_retrieval.serve.app import create_search_app
    from needle_retrieval.serve.mcp import mcp_server
    from needle_retrieval.serve.mcp_tools import IndexTools, opened
    from needle_retrieval.serve.mcp_web_tools import WebTools
    from needle_retrieval.serve.pipelines import deploy_all
    from needle_retrieval.serve.rerank import DEFAULT_MAX_BATCH, RerankService
    from needle_retrieval.serve.ultrarag import deploy_ultrarag

    settings.pipelines_dir = NO_PIPELINES_DIR
    served = deploy_all(index_dir, fusion, trust, ultrarag_mode, tenant)
    ultrarag = deploy_ultrarag(served)  # served.ultrarag_mode, else dense first; MCP's retriever_search shares it
    max_batch = DEFAULT_MAX_BATCH if reranker_max_batch is None else reranker_max_batch
    rerank = RerankService(reranker, max_batch) if reranker else None
    hosts = LOOPBACK_NAMES if host in LOOPBACK_NAMES else None
    index = IndexTools(open=opened(served), searches={"": (served, ultrarag)})
    mcp = mcp_server(index, WebTools.from_environment(deploy_search), served)
    app = create_search_app(served, cors_origins, hosts, ultrarag=ultrarag, reranker=rerank, mcp=mcp)
    searched = ultrarag.name.removesuffix("_batch_search")
    names = ", ".join([*served.registry.get_names(), "mcp", f"search ({searched})", *(["rerank"] if rerank else [])])
    return app, names, served.fusion


def run(app: "FastAPI", host: str, port: int, sockets: list[socket.socket]) -> None:
    """Serve APP on SOCKETS until interrupted: Hayhooks' ``run_app`` (its logging, uvicorn's settings), except
    that uvicorn serves the sockets ``listen`` bound instead of binding HOST:PORT itself (``run_app`` takes no
    socket), and reads request heads of at most 64 KiB (``needle_retrieval.serve.head_limit``); HOST and PORT are
    only for uvicorn's start-up line.
    """
    import uvicorn
    from hayhooks.server.logger import intercept_stdlib_logging
    from hayhooks.settings import settings

    from needle_retrieval.serve.head_limit import HeadLimitProtocol

    intercept_stdlib_logging(
        settings.intercepted_loggers, access_log_excluded_path_prefixes=settings.access_log_excluded_path_prefixes
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=HeadLimitProtocol,
        log_config=None,
        timeout_graceful_shutdown=settings.graceful_shutdown_timeout,
    )
    uvicorn.Server(config).run(sockets=sockets)
