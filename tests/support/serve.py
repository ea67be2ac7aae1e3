"""Shared by the `needle serve` tests: one sample index per test run, real servers as subprocesses, raw HTTP.

Servers run `python -m needle_retrieval.cli serve` from this checkout on a free 127.0.0.1 port, log to a file (a pipe
nobody reads would block a chatty server) and are stopped by the test session or the ``started`` context.
"""

import contextlib
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.once import built_once
from tests.support.paths import REPO, SAMPLE

ALL_PIPELINES = {"dense_search", "bm25_search", "hybrid_search", "rrf_search"}
START_TIMEOUT_S = 180.0
_SHARED: dict[str, object] = {}


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: status, headers (lower-case names) and body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)


@dataclass
class Server:
    """A running `needle serve` process and where it answers."""

    process: subprocess.Popen
    host: str
    port: int
    log: Path

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> Answer:
        """Send one request as raw bytes (so tests can send what no client library would) and read the answer."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def post_json(self, path: str, payload: object, headers: dict[str, str] | None = None) -> Answer:
        """POST a JSON document (lone surrogates allowed: they are written as ``\\ud800`` escapes)."""
        body = json.dumps(payload).encode("ascii")
        return self.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def needle_command(*args: str) -> list[str]:
    """The CLI of this checkout, run by this interpreter."""
    return [sys.executable, "-m", "needle_retrieval.cli", *args]


def server_env() -> dict[str, str]:
    """The environment a user has: offline hub, no allowlist set by hand."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HAYSTACK_DESERIALIZATION_ALLOWLIST", None)
    return env


def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`needle index samples/python_docs.jsonl --bm25`, built once per test run (by one pytest-xdist worker)."""
    if "index" not in _SHARED:
        _SHARED["index"] = built_once(tmp_path_factory, "serve-sample", _build_sample) / "index"
    return _SHARED["index"]  # type: ignore[return-value]


def _build_sample(root: Path) -> None:
    done = subprocess.run(
        needle_command("index", str(SAMPLE), "--out", str(root / "index"), "--bm25"),
        check=False,
        cwd=REPO,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (root / "tree.json").write_text(json.dumps(tree(root / "index")), encoding="utf-8")  # before any server ran


def start(index: Path, log: Path, *extra: str, pipelines: set[str] = ALL_PIPELINES) -> Server:
    """Start `needle serve INDEX` and wait until /status lists PIPELINES; fail with its log if it dies first."""
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            needle_command("serve", str(index), "--port", str(port), *extra),
            cwd=REPO,
            env=server_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = Server(process, "127.0.0.1", port, log)
    end = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < end:
        if process.poll() is not None:
            pytest.fail(f"needle serve exited with {process.returncode}:\n{server.output()[-3000:]}")
        with contextlib.suppress(OSError):
            if pipelines <= set(server.request("GET", "/status", timeout=5).json()["pipelines"]):
                return server
        time.sleep(0.5)
    stop(server)
    pytest.fail(f"needle serve did not deploy {pipelines} within {START_TIMEOUT_S:.0f}s:\n{server.output()[-3000:]}")


def stop(server: Server) -> None:
    """Stop the server: SIGTERM, then SIGKILL if it does not exit within 30 s."""
    server.process.terminate()
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=30)


@contextlib.contextmanager
def started(index: Path, log: Path, *extra: str) -> Iterator[Server]:
    """A server for one test or module, always stopped."""
    server = start(index, log, *extra)
    try:
        yield server
    finally:
        stop(server)


def shared_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    """The default server (no flags) over the sample index, started once per session and stopped at its end."""
    if "server" not in _SHARED:
        index = sample_index(tmp_path_factory)
        server = start(index, tmp_path_factory.mktemp("serve-log") / "server.log")
        request.config.add_cleanup(lambda: stop(server))
        _SHARED["server"] = server
    return _SHARED["server"]  # type: ignore[return-value]


def tree_before_serving() -> dict[str, str]:
    """The sample index's tree as it was built, before any server (of any pytest-xdist worker) started on it."""
    index = _SHARED["index"]
    assert isinstance(index, Path), "sample_index builds the index first"
    snapshot: dict[str, str] = json.loads((index.parent / "tree.json").read_text(encoding="utf-8"))
    return snapshot


def tree(root: Path) -> dict[str, str]:
    """Every entry under ROOT: relative path -> sha256 of a file's bytes, or "dir"; symlinks by their target."""
    entries: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            entries[rel] = f"link:{os.readlink(path)}"
        elif path.is_dir():
            entries[rel] = "dir"
        else:
            entries[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return entries
