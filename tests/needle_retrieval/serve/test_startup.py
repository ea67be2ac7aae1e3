"""How `needle serve` starts: refuses bad flags and broken indexes with one line, serves a read-only copy, and
sends CORS headers to exactly the origins given with ``--cors-origin``.
"""

import errno
import shutil
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from needle_retrieval.cli import main
from tests.support.paths import REPO
from tests.support.serve import (
    Server,
    free_port,
    needle_command,
    sample_index,
    server_env,
    started,
    tree,
)

pytestmark = pytest.mark.integration
ALLOWED = "http://app.example"
PREFLIGHT = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_index(tmp_path_factory)


def serve_until_exit(index_dir: Path, timeout: float = 300, port: int | None = None) -> subprocess.CompletedProcess:
    """Run `needle serve` that is expected to stop by itself; fail (and kill it) if it serves instead."""
    try:
        return subprocess.run(
            needle_command("serve", str(index_dir), "--port", str(port or free_port())),
            check=False,
            cwd=REPO,
            env=server_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"needle serve {index_dir} kept running instead of refusing to start")


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("needle: error:")]


@pytest.mark.parametrize("port", ["0", "70000", "-1", "http"])
def test_port_out_of_range_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture, port: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", str(tmp_path), "--port", port])
    assert exited.value.code == 2
    assert "--port" in capsys.readouterr().err


def test_missing_index_is_one_line(tmp_path: Path) -> None:
    done = serve_until_exit(tmp_path / "nothing-here", timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert error_lines(done.stderr) == [done.stderr.strip()], done.stderr[-2000:]
    assert "index directory not found" in done.stderr


def test_broken_index_part_stops_start_up_naming_the_pipeline(index: Path, tmp_path: Path) -> None:
    """A corrupt FAISS file: the stores load lazily, so only the start-up probe finds it; no "Up!" without it."""
    broken = tmp_path / "broken"
    shutil.copytree(index, broken, symlinks=True)
    vectors = sorted(broken.rglob("*.faiss"))
    assert vectors, "no FAISS file found in the index: the test must corrupt one"
    for path in vectors:
        path.write_bytes(b"not a faiss index")
    done = serve_until_exit(broken)
    lines = error_lines(done.stderr)
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("needle: error: pipeline dense_search failed to deploy"), lines
    assert "Traceback" not in done.stderr


def listening_socket(reuse_address: bool) -> socket.socket:
    """Another server's socket: listening on a free 127.0.0.1 port, with or without SO_REUSEADDR (uvicorn sets it)."""
    sock = socket.socket()
    if reuse_address:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@pytest.mark.parametrize("reuse_address", [False, True], ids=["plain", "reuseaddr"])
def test_a_port_in_use_is_one_line_before_any_pipeline_loads(index: Path, tmp_path: Path, reuse_address: bool) -> None:
    """Exit 2 with one line naming HOST:PORT; the index's pipelines (a broken one here) are never reached."""
    broken = tmp_path / "broken"
    shutil.copytree(index, broken, symlinks=True)
    for path in broken.rglob("*.faiss"):
        path.write_bytes(b"not a faiss index")  # deploying would fail, naming dense_search
    with listening_socket(reuse_address) as other:
        port = other.getsockname()[1]
        done = serve_until_exit(broken, timeout=120, port=port)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.strip() == (
        f"needle: error: 127.0.0.1:{port} is in use: another server listens there; stop it or choose another --port"
    ), done.stderr[-3000:]
    assert done.stdout == ""  # no "needle serve: ..." banner, no uvicorn line


def test_the_port_is_held_while_the_pipelines_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the pipelines deploy nobody else can listen on the port (uvicorn serves the socket bound first);
    it is free again once serve gives up."""
    import needle_retrieval.serve.pipelines
    from needle_retrieval.errors import NeedleError
    from needle_retrieval.serve.server import serve

    port = free_port()
    tried: list[int] = []

    def deploy_all(
        index_dir: Path, fusion: object = None, trust: object = None, mode: object = None, tenant: object = None
    ) -> None:
        other = socket.socket()
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            other.bind(("127.0.0.1", port))
            other.listen()
            tried.append(0)
        except OSError as error:
            tried.append(error.errno)
        finally:
            other.close()
        raise NeedleError("stopped in deploy_all")

    monkeypatch.setattr(needle_retrieval.serve.pipelines, "deploy_all", deploy_all)
    with pytest.raises(NeedleError, match="stopped in deploy_all"):
        serve(tmp_path, "127.0.0.1", port, [])
    assert tried == [errno.EADDRINUSE]
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))  # free again: serve closed its socket


@pytest.fixture(scope="module")
def read_only_copy(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the sample index with every write bit cleared (restored afterwards so pytest can delete it)."""
    copy = tmp_path_factory.mktemp("read-only") / "index"
    shutil.copytree(index, copy, symlinks=True)
    paths = [copy, *copy.rglob("*")]
    for path in paths:
        path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
    yield copy
    for path in paths:
        path.chmod(stat.S_IMODE(path.stat().st_mode) | stat.S_IWUSR)


@pytest.fixture(scope="module")
def cors_server(read_only_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`needle serve` of the read-only copy, allowing one browser origin."""
    log = tmp_path_factory.mktemp("cors-log") / "server.log"
    before = tree(read_only_copy)
    with started(read_only_copy, log, "--cors-origin", ALLOWED) as server:
        yield server
    assert tree(read_only_copy) == before


def test_read_only_index_is_served_in_every_mode(cors_server: Server, read_only_copy: Path) -> None:
    for name in ("dense_search", "bm25_search", "hybrid_search", "rrf_search"):
        answer = cors_server.post_json(f"/{name}/run", {"query": "read and write ZIP files", "top_k": 1})
        assert answer.status == 200, (name, answer.body[:300])
    assert not [p for p in read_only_copy.rglob("*") if p.suffix in (".yml",) or p.name.startswith(".")]


def test_allowed_origin_gets_cors_headers(cors_server: Server) -> None:
    preflight = cors_server.request("OPTIONS", "/dense_search/run", headers={"Origin": ALLOWED, **PREFLIGHT})
    simple = cors_server.post_json("/dense_search/run", {"query": "zip"}, headers={"Origin": ALLOWED})
    assert preflight.status == 200
    assert preflight.headers["access-control-allow-origin"] == ALLOWED
    assert simple.status == 200
    assert simple.headers["access-control-allow-origin"] == ALLOWED


def test_other_origin_gets_no_cors_headers(cors_server: Server) -> None:
    other = {"Origin": "http://evil.example"}
    preflight = cors_server.request("OPTIONS", "/dense_search/run", headers={**other, **PREFLIGHT})
    simple = cors_server.post_json("/dense_search/run", {"query": "zip"}, headers=other)
    assert preflight.status == 400
    assert "access-control-allow-origin" not in preflight.headers
    assert simple.status == 200
    assert "access-control-allow-origin" not in simple.headers


def test_a_loopback_server_refuses_other_host_names(cors_server: Server) -> None:
    """A page on evil.example whose DNS name turns into 127.0.0.1 (DNS rebinding) gets no answer."""
    query = {"query": "zip", "top_k": 1}
    rebound = cors_server.post_json("/dense_search/run", query, headers={"Host": f"evil.example:{cors_server.port}"})
    local = cors_server.post_json("/dense_search/run", query, headers={"Host": f"localhost:{cors_server.port}"})
    assert rebound.status == 400
    assert b"documents" not in rebound.body
    assert local.status == 200


def test_the_index_is_opened_once_for_all_served_pipelines(index: Path) -> None:
    from needle_retrieval.serve.pipelines import deploy_all
    from needle_retrieval.serve.ultrarag import deploy_ultrarag

    served = deploy_all(index)
    ultrarag = deploy_ultrarag(served)
    wrappers = [served.registry.get(name) for name in served.runners]
    pipelines = [wrapper.pipeline for wrapper in wrappers if wrapper is not None] + [ultrarag.runner.pipeline]
    stores = [c.document_store for p in pipelines for _, c in p.walk() if hasattr(c, "document_store")]
    assert len(stores) >= 7  # dense 1, bm25 1, hybrid 2, rrf 2, /search's dense batch 1
    assert len({id(store) for store in stores}) == 2  # one FAISS store and one BM25 store, shared by all
