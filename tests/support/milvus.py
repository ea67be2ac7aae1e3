"""Milvus for the tests: a real `milvus-lite server` subprocess, and a ``milvus_uri`` fixture over Lite and server.

Every Milvus test runs twice: against Milvus Lite (a fresh ``tmp_path/"m.db"``, in this process) and against
``milvus-lite server`` on a free 127.0.0.1 port (``http://127.0.0.1:P``), one server per test module. Tests on the
server share its database, so each takes a fresh collection name from ``milvus_collection``.

A test module takes the fixtures by assignment (``milvus_uri = milvus_support.milvus_uri``), which gives it
module-scoped ones of its own (one server per module). The corpus and comparison helpers live here too.
"""

import contextlib
import itertools
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from tests.support.paths import REPO

MILVUS_LITE = REPO / ".venv" / "bin" / "milvus-lite"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
_names = itertools.count()
DIM = 16
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
    "river",
    "stone",
    "cloud",
]


def corpus(n: int = 40, seed: int = 0) -> list[Document]:
    """Random unit vectors; texts of 3 to 12 random words (so BM25 scores mostly differ); full metadata."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        Document(
            id=f"d{i:02d}",
            content=" ".join(rng.choice(WORDS, size=int(rng.integers(3, 13)))),
            embedding=vectors[i].tolist(),
            meta={"n": i, "kind": "odd" if i % 2 else "even", "group": "abc"[i % 3], "weight": i / 10},
        )
        for i in range(n)
    ]


def ids(documents: list[Document]) -> list[str]:
    return [document.id for document in documents]


def assert_same_results(got: list[list[Document]], expected: list[list[Document]]) -> None:
    """The same documents in the same order; scores equal up to float32 rounding (a batched matmul differs there)."""
    assert [ids(hits) for hits in got] == [ids(hits) for hits in expected]
    for hits, wanted in zip(got, expected, strict=True):
        assert [(h.content, h.meta) for h in hits] == [(w.content, w.meta) for w in wanted]
        assert [h.score for h in hits] == pytest.approx([w.score for w in wanted], rel=1e-5, abs=1e-6)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def milvus_lite_command() -> list[str]:
    """The `milvus-lite` of this checkout's venv, or the module of the running interpreter."""
    if MILVUS_LITE.exists():
        return [str(MILVUS_LITE)]
    return [sys.executable, "-m", "milvus_lite.cmdline"]


class MilvusServer:
    """`milvus-lite server --data-dir D --host 127.0.0.1 --port P` as a subprocess; restarts keep D and P."""

    def __init__(self, data_dir: Path, log: Path, port: int | None = None) -> None:
        self.data_dir, self.log = data_dir, log
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "MilvusServer":
        """Start the server and wait until a client can list its collections; fail with its log if it cannot."""
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                [*milvus_lite_command(), "server", "--data-dir", str(self.data_dir), *self._address()],
                cwd=REPO,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        self.wait_ready()
        return self

    def _address(self) -> list[str]:
        return ["--host", "127.0.0.1", "--port", str(self.port)]

    def wait_ready(self, deadline_s: float = START_TIMEOUT_S) -> None:
        from pymilvus import MilvusClient

        end = time.monotonic() + deadline_s
        last: Exception | None = None
        while time.monotonic() < end:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                pytest.fail(f"milvus-lite server exited with {code}:\n{self.output()[-3000:]}")
            if not _listening(self.port):  # a refused client connection would log pymilvus's tracebacks
                time.sleep(0.1)
                continue
            try:
                client = MilvusClient(uri=self.uri, timeout=2)
                try:
                    client.list_collections()
                    return
                finally:
                    client.close()
            except Exception as error:  # not listening yet: pymilvus raises its own exception types
                last = error
            time.sleep(0.2)
        self.stop()
        pytest.fail(
            f"milvus-lite server at {self.uri} did not answer within {deadline_s:.0f}s ({last!r}):\n"
            f"{self.output()[-3000:]}"
        )

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit within STOP_TIMEOUT_S."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)

    def restart(self) -> None:
        """Stop and start again on the same data directory and port."""
        self.stop()
        self.start()

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""


@contextlib.contextmanager
def running_server(root: Path) -> Iterator[MilvusServer]:
    """A started server over ``root/data`` (log in ``root/server.log``), always stopped."""
    server = MilvusServer(root / "data", root / "server.log").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusServer]:
    """One `milvus-lite server` for the test module."""
    with running_server(tmp_path_factory.mktemp("milvus-server")) as server:
        yield server


@pytest.fixture
def milvus_servers(tmp_path: Path) -> Iterator[Callable[[], MilvusServer]]:
    """Start more servers of the test's own (each over its own data directory); all stopped at the end."""
    started: list[MilvusServer] = []

    def start() -> MilvusServer:
        root = tmp_path / f"server{len(started)}"
        root.mkdir()
        started.append(MilvusServer(root / "data", root / "server.log"))
        return started[-1].start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture(params=["lite", "server"])
def milvus_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the test's store lives: a fresh Milvus Lite path, or the module's server."""
    if request.param == "lite":
        return str(tmp_path / "m.db")
    server: MilvusServer = request.getfixturevalue("milvus_server")
    return server.uri


@pytest.fixture(scope="module", params=["lite", "server"])
def milvus_module_uri(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Like ``milvus_uri``, for data a whole module reads (creating a collection costs pymilvus about 1 s)."""
    if request.param == "lite":
        return str(tmp_path_factory.mktemp("milvus-lite") / "m.db")
    server: MilvusServer = request.getfixturevalue("milvus_server")
    return server.uri


@pytest.fixture
def milvus_collection() -> str:
    """A collection name no other test uses (tests on the server share one database)."""
    return f"t{next(_names)}_{uuid.uuid4().hex[:8]}"


def is_server(uri: str) -> bool:
    return uri.startswith("http")


AUTH_FAILURE = "auth check failure, please check username and password are correct"  # Milvus's proxy, verbatim


@contextlib.contextmanager
def authenticating_milvus(data_dir: Path, token: str) -> Iterator[str]:
    """
    Milvus Lite's gRPC service behind a token check, in this process; yields its URI.

    `milvus-lite server` accepts any token, and no Milvus server with authentication runs here. A Milvus server
    with ``authorizationEnabled`` checks the ``authorization`` header (base64 of the token) in a gRPC
    interceptor and answers UNAUTHENTICATED with AUTH_FAILURE; this does the same in front of Milvus Lite.
    """
    import base64
    from concurrent import futures

    import grpc
    from milvus_lite.adapter.grpc.servicer import MilvusServicer
    from milvus_lite.db import MilvusLite
    from pymilvus.grpc_gen import milvus_pb2_grpc

    expected = base64.b64encode(token.encode()).decode()

    def deny(request: object, context: grpc.ServicerContext) -> None:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, AUTH_FAILURE)

    class TokenCheck(grpc.ServerInterceptor):
        def intercept_service(self, continuation: Callable[..., object], details: grpc.HandlerCallDetails) -> object:
            if dict(details.invocation_metadata or ()).get("authorization") == expected:
                return continuation(details)
            return grpc.unary_unary_rpc_method_handler(deny)

    db = MilvusLite(str(data_dir))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[TokenCheck()])
    milvus_pb2_grpc.add_MilvusServiceServicer_to_server(MilvusServicer(db), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop(grace=0)
        db.close()
