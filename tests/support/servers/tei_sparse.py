"""A small local server speaking TEI's ``/embed_sparse`` protocol, for tests (stdlib only, run in a thread).

``POST /embed_sparse`` ``{"inputs": str | [str], "truncate"?: bool}`` -> one list per input of
``{"index", "value"}`` entries, as TEI serving a SPLADE model answers. The vectors are lexical: a word's term id is
its crc32 modulo ``VOCABULARY``, its value the word's count, so texts sharing words share terms. Errors are TEI's
``{"error", "error_type"}``: no inputs 400 ``empty``, more inputs than ``max_client_batch_size`` 413 ``validation``.
``faults`` (a list the test fills) holds ``(status, error_type)`` answers to send, one per request, before normal
ones; ``malformed`` a body to send once instead of the answer; ``requests`` logs each request's input count.
"""

import json
import re
import threading
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VOCABULARY = 30522
WORD = re.compile(r"\w+")


def sparse_entries(text: str) -> list[dict[str, Any]]:
    """The ``{"index", "value"}`` entries of TEXT: one per distinct word (term ids ascending)."""
    counts: Counter[int] = Counter(zlib.crc32(w.encode()) % VOCABULARY for w in WORD.findall(text.lower()))
    return [{"index": index, "value": float(count)} for index, count in sorted(counts.items())]


class TEISparseServer(ThreadingHTTPServer):
    """The server, with what tests control and observe."""

    def __init__(self, max_client_batch_size: int = 32) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.max_client_batch_size = max_client_batch_size
        self.faults: list[tuple[int, str]] = []
        self.malformed: Any = None
        self.requests: list[int] = []
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        """The base URL, http://127.0.0.1:PORT."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> "TEISparseServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: TEISparseServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        if self.path != "/embed_sparse":
            self._send(404, {"error": "not found", "error_type": "validation"})
            return
        inputs = body.get("inputs") if isinstance(body, dict) else None
        inputs = [inputs] if isinstance(inputs, str) else inputs
        self.server.requests.append(len(inputs or []))
        if self.server.faults:
            status, kind = self.server.faults.pop(0)
            self._send(status, {"error": f"injected {kind}", "error_type": kind})
        elif self.server.malformed is not None:
            malformed, self.server.malformed = self.server.malformed, None
            self._send(200, malformed)
        elif not inputs:
            self._send(400, {"error": "`inputs` cannot be empty", "error_type": "empty"})
        elif len(inputs) > self.server.max_client_batch_size:
            limit = self.server.max_client_batch_size
            message = f"batch size {len(inputs)} > maximum allowed batch size {limit}"
            self._send(413, {"error": message, "error_type": "validation"})
        else:
            self._send(200, [sparse_entries(text) for text in inputs])
