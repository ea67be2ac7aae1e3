"""`needle serve`: an index's search pipelines over HTTP, in this process, with Hayhooks' registry and runner.

The app is built here rather than by ``hayhooks run``, whose app also mounts deploy, undeploy, file and chat
routes and allows every CORS origin; see ``needle.serve_app`` for what this one exposes. Pipelines come from
memory (``needle.serve_pipelines``), so nothing is read from or written to pipeline files in the index.
"""

from pathlib import Path

from hayhooks.server.app import run_app
from hayhooks.settings import settings

from needle.serve_app import create_search_app
from needle.serve_pipelines import deploy_all

# Hayhooks saves deployed YAML under settings.pipelines_dir; no route here deploys, and should anything try, this
# path cannot be created (its parent is a device, not a directory).
NO_PIPELINES_DIR = "/dev/null/needle-serve-deploys-nothing"
# Host names a browser uses for a server bound to this machine only; any other Host header is refused there.
LOOPBACK_NAMES = ["127.0.0.1", "localhost"]


def serve(index_dir: Path, host: str, port: int, cors_origins: list[str]) -> None:
    """Deploy every search pipeline INDEX_DIR supports, then answer queries until interrupted.

    Raises NeedleError (one line, exit 2 from the CLI) when the index is missing or any pipeline fails to deploy.
    """
    settings.pipelines_dir = NO_PIPELINES_DIR
    served = deploy_all(index_dir)
    app = create_search_app(served, cors_origins, LOOPBACK_NAMES if host in LOOPBACK_NAMES else None)
    names = ", ".join(served.registry.get_names())
    print(f"needle serve: {names} from {index_dir} on http://{host}:{port}", flush=True)
    run_app(app, host=host, port=port)
