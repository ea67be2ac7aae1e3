"""`needle serve`: the search pipelines of an index directory over HTTP with Hayhooks."""

import os
import sys
from pathlib import Path

from needle.index_dir import IndexManifest


def serve(index_dir: Path, host: str, port: int, cors_origins: list[str]) -> None:
    """Run Hayhooks over INDEX_DIR's search pipelines (this process becomes the server)."""
    IndexManifest.load(index_dir)
    env = dict(os.environ)
    allow = [p for p in env.get("HAYSTACK_DESERIALIZATION_ALLOWLIST", "").split(",") if p]
    env["HAYSTACK_DESERIALIZATION_ALLOWLIST"] = ",".join([*allow, "components.*"])
    hayhooks = str(Path(sys.executable).with_name("hayhooks"))
    argv = [hayhooks, "run", "--host", host, "--port", str(port), "--pipelines-dir", str(index_dir)]
    os.execve(hayhooks, argv, env)
