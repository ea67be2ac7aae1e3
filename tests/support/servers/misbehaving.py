"""A local HTTP server that misbehaves on purpose, for the tests of outbound deadlines and size limits (stdlib only).

Every POST (and GET), whatever its path, is answered the way ``state.mode`` says:

- ``dribble``: 200 and headers at once (a Content-Length of 1 MB), then one body byte per second;
- ``dribble-headers``: the status line and headers one byte per second (they never end);
- ``huge``: 200 with 300 MB of body streamed lazily (never allocated), no Content-Length: it ends when the
  connection closes;
- ``huge-declared``: the same body with its Content-Length of 300 MB declared;
- ``gzip-bomb``: 200 with ``Content-Encoding: gzip`` (whether asked for or not): 300 MB of spaces compressed on
  the fly into about 300 KB;
- ``deep``: JSON nested 100,000 arrays deep, with ``state.status`` (200 unless set);
- ``not-json``: an HTML page, with ``state.status``;
- ``json``: ``state.body`` (any JSON value, e.g. a shape no client expects), with ``state.status``;
- ``gzip-json``: ``state.body`` gzip-compressed, with ``Content-Encoding: gzip`` (a well-behaved compressed answer);
- ``redirect``: ``state.status`` if it is a 3xx (else 307) with ``Location: /elsewhere`` on this server; a client
  that followed it shows up in ``state.paths``;
- ``br-garbage`` / ``gzip-garbage``: 200 with ``Content-Encoding: br`` / ``gzip`` and a body that is neither;
- ``truncated-json``: ``state.body`` as JSON cut in the middle (its Content-Length matches what is sent);
- ``text-plain``: 200 ``text/plain`` that is no JSON;
- ``retry-after``: ``state.status`` if it is 4xx/5xx (else 429) with ``Retry-After: state.retry_after`` (60 unless
  set) and an OpenAI-shaped error body.

``state.requests`` counts the requests, ``state.paths`` lists their paths and ``state.sent`` the body bytes written
(a client that stops reading at its limit leaves it far below 300 MB). A client that gives up ends the dribbling at
the next byte; ``serve`` stops every handler when the test ends.
"""

import contextlib
import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HUGE_BYTES = 300 * 1000 * 1000
CHUNK = 64 * 1024
DEPTH = 100_000
DISCONNECTED = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class State:
    """What a test sets (mode, status, body) and observes (requests, sent)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.mode = "json"
        self.status = 200
        self.body: Any = {}
        self.requests = 0
        self.paths: list[str] = []
        self.retry_after = 60
        self.sent = 0

    def count(self, n: int) -> None:
        with self.lock:
            self.sent += n


def make_handler(state: State) -> type[BaseHTTPRequestHandler]:
    """A handler answering every POST as ``state.mode`` says."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with state.lock:
                state.requests += 1
                state.paths.append(self.path)
            answer = getattr(self, "answer_" + state.mode.replace("-", "_"))
            with contextlib.suppress(*DISCONNECTED):
                answer()
            self.close_connection = True

        do_GET = do_POST  # a client that follows a 301/302/303 asks with GET

        def answer_dribble(self) -> None:
            self.head(200, {"Content-Type": "application/json", "Content-Length": "1000000"})
            self.trickle(b'{"results": [' + b" " * 999_986 + b"]}")

        def answer_dribble_headers(self) -> None:
            self.trickle(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 100_000 + b"\r\n\r\n")

        def answer_huge(self) -> None:
            self.head(200, {"Content-Type": "application/json", "Connection": "close"})
            self.stream(self.spaces())

        def answer_huge_declared(self) -> None:
            self.head(200, {"Content-Type": "application/json", "Content-Length": str(HUGE_BYTES)})
            self.stream(self.spaces())

        def answer_gzip_bomb(self) -> None:
            self.head(200, {"Content-Type": "application/json", "Content-Encoding": "gzip", "Connection": "close"})
            packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            self.stream(packer.compress(chunk) for chunk in self.spaces())
            self.stream(iter([packer.flush()]))

        def answer_deep(self) -> None:
            self.whole(b"[" * DEPTH + b"]" * DEPTH)

        def answer_not_json(self) -> None:
            self.whole(b"<html><body>502 Bad Gateway</body></html>", "text/html")

        def answer_json(self) -> None:
            self.whole(json.dumps(state.body).encode())

        def answer_gzip_json(self) -> None:
            body = gzip.compress(json.dumps(state.body).encode())
            self.head(state.status, {"Content-Type": "application/json", "Content-Encoding": "gzip",
                                     "Content-Length": str(len(body))})  # fmt: skip
            self.stream(iter([body]))

        def answer_redirect(self) -> None:
            status = state.status if 300 <= state.status < 400 else 307
            self.head(status, {"Location": "/elsewhere", "Content-Length": "0"})

        def answer_br_garbage(self) -> None:
            self.encoded(b"this is not brotli", "br")

        def answer_gzip_garbage(self) -> None:
            self.encoded(b"this is not gzip", "gzip")

        def answer_truncated_json(self) -> None:
            body = json.dumps(state.body).encode()
            self.whole(body[: max(1, len(body) // 2)])

        def answer_text_plain(self) -> None:
            self.whole(b"Service is up.", "text/plain")

        def answer_retry_after(self) -> None:
            body = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode()
            headers = {"Content-Type": "application/json", "Retry-After": str(state.retry_after)}
            self.head(state.status if state.status >= 400 else 429, {**headers, "Content-Length": str(len(body))})
            self.stream(iter([body]))

        def encoded(self, body: bytes, coding: str) -> None:
            self.head(200, {"Content-Type": "application/json", "Content-Encoding": coding,
                            "Content-Length": str(len(body))})  # fmt: skip
            self.stream(iter([body]))

        def head(self, status: int, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.flush()

        def whole(self, body: bytes, kind: str = "application/json") -> None:
            self.head(state.status, {"Content-Type": kind, "Content-Length": str(len(body))})
            self.stream(iter([body]))

        def spaces(self) -> Iterator[bytes]:
            chunk = b" " * CHUNK
            for _ in range(HUGE_BYTES // CHUNK):
                if state.stop.is_set():
                    return
                yield chunk

        def stream(self, chunks: Iterator[bytes]) -> None:
            for chunk in chunks:
                if chunk:
                    self.wfile.write(chunk)
                    state.count(len(chunk))

        def trickle(self, data: bytes) -> None:
            """Write DATA one byte per second until it ends, the client leaves, or the server stops."""
            for i in range(len(data)):
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                state.count(1)
                if state.stop.wait(1.0):
                    return

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    return Handler


@contextmanager
def serve() -> Iterator[tuple[str, State]]:
    """Run the server on a free port of 127.0.0.1; yield its base URL and state; stop it after."""
    state = State()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="misbehaving-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
