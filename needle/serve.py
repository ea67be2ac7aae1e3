"""`needle serve`: an index's search pipelines over HTTP, in this process, with Hayhooks' registry and runner.

The app is built here rather than by ``hayhooks run``, whose app also mounts deploy, undeploy, file and chat
routes and allows every CORS origin; see ``needle.serve_app`` for what this one exposes. Pipelines come from
memory (``needle.serve_pipelines``), so nothing is read from or written to pipeline files in the index.
"""

from pathlib import Path

from hayhooks.server.app import run_app
from hayhooks.settings import settings

from needle.mcp_tools import IndexTools, opened
from needle.mcp_web_tools import WebTools
from needle.serve_app import create_search_app
from needle.serve_mcp import mcp_server
from needle.serve_pipelines import deploy_all
from needle.serve_rerank import DEFAULT_MAX_BATCH, RerankService
from needle.serve_ultrarag import deploy_ultrarag

# Hayhooks saves deployed YAML under settings.pipelines_dir; no route here deploys, and should anything try, this
# path cannot be created (its parent is a device, not a directory).
NO_PIPELINES_DIR = "/dev/null/needle-serve-deploys-nothing"
# Host names a browser uses for a server bound to this machine only; any other Host header is refused there.
LOOPBACK_NAMES = ["127.0.0.1", "localhost"]


def serve(
    index_dir: Path,
    host: str,
    port: int,
    cors_origins: list[str],
    reranker: str | None = None,
    reranker_max_batch: int = DEFAULT_MAX_BATCH,
    deploy_search: bool = False,
) -> None:
    """Deploy every search pipeline INDEX_DIR supports (REST, MCP and UltraRAG's /search), and TEI's /rerank over
    the cross-encoder directory RERANKER when given; then answer queries until interrupted. MCP lists the web
    search tools for the providers whose key variable is set, and ``retriever_deploy_search`` with DEPLOY_SEARCH.

    Raises NeedleError (one line, exit 2 from the CLI) when the index is missing, any pipeline fails to deploy or
    the reranker fails to load.
    """
    settings.pipelines_dir = NO_PIPELINES_DIR
    served = deploy_all(index_dir)
    ultrarag = deploy_ultrarag(served)
    rerank = RerankService(reranker, reranker_max_batch) if reranker else None
    hosts = LOOPBACK_NAMES if host in LOOPBACK_NAMES else None
    index = IndexTools(open=opened(served), searches={"": (served, ultrarag)})
    mcp = mcp_server(index, WebTools.from_environment(deploy_search), served)
    app = create_search_app(served, cors_origins, hosts, ultrarag=ultrarag, reranker=rerank, mcp=mcp)
    names = ", ".join([*served.registry.get_names(), "mcp", "search", *(["rerank"] if rerank else [])])
    print(f"needle serve: {names} from {index_dir} on http://{host}:{port}", flush=True)
    run_app(app, host=host, port=port)
