"""What one client can hold or fill on a real `needle serve`: MCP event streams, request heads, the search pool.

``GET /mcp`` is a 405 (the MCP streamable-HTTP spec lets a server without server-initiated messages say so): before,
each one opened an event stream that never ended (1,000 held 1,000 descriptors). A request line and headers past
64 KiB are a 431 and the connection closes, while the rest of the head is still arriving: before, a 96 MiB header
held the event loop for 28 s. Heavy ``/search`` batches no longer keep a one-query request waiting for a thread.
"""

import contextlib
import socket
import threading
import time

import pytest

from needle_retrieval.serve.head_limit import MAX_HEAD_BYTES
from tests.support.serve import Answer, Server, shared_server

pytestmark = pytest.mark.integration
MiB = 1 << 20
SSE_HEADERS = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


def status_seconds(server: Server) -> float:
    """How long ``GET /status`` takes to answer 200."""
    started = time.monotonic()
    assert server.request("GET", "/status", timeout=60).status == 200
    return time.monotonic() - started


def head_of(server: Server, method: str, path: str, headers: dict[str, str]) -> bytes:
    """The status line and headers of the answer to one request on a raw socket; at most 10 s to read."""
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {server.host}:{server.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return read_until(sock, b"\r\n\r\n")


def read_until(sock: socket.socket, end: bytes) -> bytes:
    """Bytes from SOCK up to and including END (or all there were before it closed)."""
    received = b""
    while end not in received:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def test_get_mcp_is_a_405_not_an_endless_stream(server: Server) -> None:
    """Fifty GETs that ask for an event stream: each a complete 405 naming POST, none left open."""
    for _ in range(50):
        head = head_of(server, "GET", "/mcp", SSE_HEADERS)
        assert head.startswith(b"HTTP/1.1 405"), head[:300]
        assert b"allow: post" in head.lower(), head[:300]
        assert b"text/event-stream" not in head, head[:300]
    assert status_seconds(server) < 1


def test_delete_mcp_is_a_405(server: Server) -> None:
    answer = server.request("DELETE", "/mcp", headers=SSE_HEADERS, timeout=10)
    assert answer.status == 405, answer.body[:300]


def send_head(server: Server, header_bytes: int) -> bytes:
    """A GET /status whose one header is HEADER_BYTES long, sent a MiB at a time; the answer (the server may close
    while the client is still sending, so it is read from a raw socket)."""
    with socket.create_connection((server.host, server.port), timeout=60) as sock:
        sock.sendall(b"GET /status HTTP/1.1\r\nHost: %s:%d\r\nX-Big: " % (server.host.encode(), server.port))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for start in range(0, header_bytes, MiB):
                sock.sendall(b"a" * min(MiB, header_bytes - start))
            sock.sendall(b"\r\n\r\n")
        with contextlib.suppress(ConnectionResetError):
            return read_until(sock, b"\r\n\r\n")
    return b""


@pytest.mark.timeout(120)
def test_a_huge_header_is_a_431_at_once_while_status_answers(server: Server) -> None:
    """32 MiB of one header: refused with 431 long before it is all sent; /status keeps answering meanwhile."""
    done: dict[str, bytes] = {}
    started = time.monotonic()
    sender = threading.Thread(target=lambda: done.setdefault("answer", send_head(server, 32 * MiB)))
    sender.start()
    waits = []
    while sender.is_alive():
        waits.append(status_seconds(server))
        time.sleep(0.05)
    sender.join()
    assert done["answer"].startswith(b"HTTP/1.1 431"), done["answer"][:300]
    assert time.monotonic() - started < 10
    assert max(waits, default=0) < 1, waits


def test_many_small_headers_past_the_limit_are_a_431(server: Server) -> None:
    headers = {f"X-Header-{i}": "v" * 1000 for i in range(MAX_HEAD_BYTES // 1000 + 1)}
    head = head_of(server, "GET", "/status", headers)
    assert head.startswith(b"HTTP/1.1 431"), head[:300]


def test_a_head_just_under_the_limit_is_answered(server: Server) -> None:
    answer: Answer = server.request("GET", "/status", headers={"X-Big": "a" * (MAX_HEAD_BYTES - 1024)}, timeout=30)
    assert answer.status == 200, answer.body[:300]


def probe_seconds(server: Server) -> float:
    """How long a one-query BM25 search takes to answer 200."""
    started = time.monotonic()
    answer = server.post_json("/bm25_search/run", {"query": "read and write zip archives", "top_k": 3})
    assert answer.status == 200, answer.body[:300]
    return time.monotonic() - started


@pytest.mark.timeout(600)
def test_a_one_query_request_is_answered_while_heavy_batches_run(server: Server) -> None:
    """Four clients' batches of 400 long queries fill the batch pool; a one-query search meanwhile takes its own
    lane: under 5 s every time, where it waited for a whole batch before (11-17 s here, 12 s in issue 32)."""
    batch = [
        f"query {i}: " + "how do zip archives store files and how do threads wait on locks " * 5 for i in range(400)
    ]
    statuses: list[int] = []

    def heavy() -> None:
        statuses.append(server.post_json("/search", {"query_list": batch, "top_k": 10}).status)

    clients = [threading.Thread(target=heavy) for _ in range(4)]
    for client in clients:
        client.start()
    time.sleep(1.0)  # every batch is in the pool
    waits = []
    while any(client.is_alive() for client in clients):
        waits.append(probe_seconds(server))
        time.sleep(0.2)
    for client in clients:
        client.join()
    assert statuses == [200] * 4
    assert len(waits) >= 3, waits  # the batches ran long enough to be probed while they did
    assert max(waits) < 5, waits
