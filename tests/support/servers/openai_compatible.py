"""A small local embedding server that follows OpenAI's documented ``/v1/embeddings`` contract, for tests (stdlib only).

``POST /v1/embeddings`` ``{"model", "input": str | [str], "encoding_format"?: "float" | "base64", "dimensions"?}``
-> ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage": {"prompt_tokens",
"total_tokens"}}``. Errors are OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``: a wrong or missing
key 401 ``invalid_api_key``; a body that is not JSON, a missing model, an input that is not a non-empty string or a
list of 1..2048 of them, or a bad ``encoding_format``/``dimensions`` 400 ``invalid_request_error``; an unknown path 404.

Vectors are ``vector_for(text, dim)``: a deterministic unit vector from the text's SHA-256 (8 wide by default, or
``dimensions``), so a test knows what every row must be.

Test controls (in-process, on ``server.state``): ``fail`` queues statuses for the next requests (each
``{"status", "retry_after"?}`` answered in OpenAI's error shape), ``malformed`` queues broken 200 answers (one of
``MALFORMED``), ``delay_s`` slows every request, inputs containing ``[slow]`` sleep ``slow_s`` more, and ``shuffle``
sends ``data`` in reverse (with correct indexes, which the API allows). ``gather`` holds every request until that
many have been in flight at once (or ``GATHER_TIMEOUT_S`` passed): a client that sends N requests together is seen
with N in flight even when a busy machine delays some of them past another's ``delay_s``. ``state.log`` records
every request and ``state.max_in_flight`` the most requests handled at once.

    python tests/support/servers/openai_compatible.py --port 0 [--api-key K] [--delay-s S]

Prints ``READY <base url>`` (ending in ``/v1``) once it listens.
"""

import argparse
import base64
import hashlib
import json
import math
import struct
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_DIM = 8
MAX_INPUTS = 2048
Reply = tuple[int, Any, dict[str, str] | None]  # status, body (JSON-able, or bytes sent as text/html), headers
GATHER_TIMEOUT_S = 10.0  # how long ``gather`` holds a request for others to arrive
MALFORMED = ("not-json", "no-data", "fewer", "string-value", "ragged", "duplicate-index", "nan")


def vector_for(text: str, dim: int = DEFAULT_DIM) -> list[float]:
    """The unit vector this server returns for ``text``: SHA-256 bytes (hashed again for width) mapped to [-1, 1]."""
    raw = b""
    seed = text.encode("utf-8")
    while len(raw) < dim:
        seed = hashlib.sha256(seed).digest()
        raw += seed
    values = [byte / 127.5 - 1.0 for byte in raw[:dim]]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


class State:
    """What tests control and observe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)  # notified whenever a request starts
        self.stop = threading.Event()
        self.reset()

    def reset(self) -> None:
        """Forget faults, delays and the log."""
        self.fail: list[dict[str, Any]] = []
        self.malformed: list[str] = []
        self.delay_s = 0.0
        self.slow_s = 0.0
        self.shuffle = False
        self.gather = 0
        self.log: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def gathered(self) -> bool:
        """Whether ``gather`` requests have been in flight at once (or the server is stopping): call under lock."""
        return self.max_in_flight >= self.gather or self.stop.is_set()

    def pop(self, queue: list[Any]) -> Any:
        """The next queued item of ``queue``, or None."""
        with self.lock:
            return queue.pop(0) if queue else None


def openai_error(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """An error body in OpenAI's documented shape."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


STATUS_ERRORS = {
    429: ("Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


class Handler(BaseHTTPRequestHandler):
    """``POST /v1/embeddings``; configuration and state live on the server object."""

    server: "EmbeddingServer"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; without this each answer waits ~40 ms

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if not isinstance(body, bytes) else "text/html")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        """Count the request in flight, log it, then answer (so a client that has its answer finds it logged)."""
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/embeddings":
            self._send(404, openai_error(f"Invalid URL (POST {self.path})", "invalid_request_error"))
            return
        state = self.server.state
        with state.lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            state.arrived.notify_all()
            state.arrived.wait_for(state.gathered, timeout=GATHER_TIMEOUT_S)
        entry: dict[str, Any] = {"status": 500, "authorization": self.headers.get("Authorization")}
        try:
            reply = self._embeddings(body, entry)
            entry["status"] = reply[0]
        finally:
            with state.lock:
                state.in_flight -= 1
                state.log.append(entry)
        self._send(*reply)

    def _embeddings(self, body: bytes, entry: dict[str, Any]) -> Reply:
        """Check the key and the request, apply queued faults and delays; the reply to send."""
        state, key = self.server.state, self.server.api_key
        if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
            return (
                401,
                openai_error("Incorrect API key provided.", "invalid_request_error", None, "invalid_api_key"),
                None,
            )
        request, problem = parse_request(body)
        if problem is not None:
            return 400, problem, None
        texts = [request["input"]] if isinstance(request["input"], str) else request["input"]
        entry.update(inputs=texts, model=request["model"], dimensions=request.get("dimensions"))
        state.stop.wait(state.delay_s + (state.slow_s if any("[slow]" in t for t in texts) else 0.0))
        fault = state.pop(state.fail)
        if fault is not None:
            message, kind, code = STATUS_ERRORS.get(fault["status"], ("Injected failure.", "server_error", None))
            headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else None
            return int(fault["status"]), openai_error(message, kind, None, code), headers
        return self._answer(request, texts)

    def _answer(self, request: dict[str, Any], texts: list[str]) -> Reply:
        """The documented success body, possibly broken as the next queued malformation says."""
        dim = request.get("dimensions") or DEFAULT_DIM
        as_base64 = request.get("encoding_format") == "base64"
        data = [
            {"object": "embedding", "index": i, "embedding": encode(vector_for(text, dim), as_base64)}
            for i, text in enumerate(texts)
        ]
        if self.server.state.shuffle:
            data.reverse()
        tokens = sum(len(text.split()) for text in texts)
        answer = {
            "object": "list",
            "data": data,
            "model": request["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        mode = self.server.state.pop(self.server.state.malformed)
        if mode == "not-json":
            return 200, b"<html>502 Bad Gateway</html>", None
        return 200, break_answer(answer, mode) if mode else answer, None


def encode(vector: list[float], as_base64: bool) -> list[float] | str:
    """A vector as JSON floats, or as base64 of little-endian float32 (what OpenAI sends for ``base64``)."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector


def break_answer(answer: dict[str, Any], mode: str) -> dict[str, Any]:
    """A copy of a valid answer broken the way ``mode`` says."""
    data = [dict(item) for item in answer["data"]]
    if mode == "no-data":
        return {key: value for key, value in answer.items() if key != "data"}
    if mode == "fewer":
        data.pop()
    elif mode == "string-value":
        data[0]["embedding"] = [*data[0]["embedding"][:-1], "0.5"]
    elif mode == "ragged":
        data[-1]["embedding"] = data[-1]["embedding"][:-1]
    elif mode == "duplicate-index" and len(data) > 1:
        data[1]["index"] = data[0]["index"]
    elif mode == "nan":
        data[0]["embedding"] = [float("nan"), *data[0]["embedding"][1:]]
    return {**answer, "data": data}


def parse_request(body: bytes) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The request as a dict, or an OpenAI-shaped 400 body naming the offending parameter."""
    try:
        request = json.loads(body)
    except ValueError:
        return {}, openai_error("We could not parse the JSON body of your request.", "invalid_request_error")
    if not isinstance(request, dict) or not isinstance(request.get("model"), str):
        return {}, openai_error("you must provide a model parameter", "invalid_request_error", "model")
    texts = request.get("input")
    texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list) or not 1 <= len(texts) <= MAX_INPUTS or not all(isinstance(t, str) for t in texts):
        message = f"'$.input' is invalid: a string or an array of 1 to {MAX_INPUTS} strings is expected"
        return {}, openai_error(message, "invalid_request_error", "input")
    if not all(texts):
        return {}, openai_error("'$.input' is invalid: empty strings are not allowed", "invalid_request_error", "input")
    if request.get("encoding_format", "float") not in ("float", "base64"):
        message = "encoding_format must be 'float' or 'base64'"
        return {}, openai_error(message, "invalid_request_error", "encoding_format")
    dims = request.get("dimensions")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        return {}, openai_error("dimensions must be an integer >= 1", "invalid_request_error", "dimensions")
    return request, None


class EmbeddingServer(ThreadingHTTPServer):
    """The HTTP server: an optional API key and the shared test state."""

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, api_key: str | None = None) -> None:
        super().__init__((host, port), Handler)
        self.api_key = api_key
        self.state = State()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client gave up on an answer (its timeout): that is what timeout tests do."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        """The API root to give a client as ``base_url``."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


@contextmanager
def serving(api_key: str | None = None) -> Iterator[EmbeddingServer]:
    """Run a server on 127.0.0.1 (a free port) in a background thread; stop it (and wake sleeping handlers) after."""
    server = EmbeddingServer(api_key=api_key)
    thread = threading.Thread(target=server.serve_forever, name="openai-compatible-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.state.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def main() -> None:
    """Parse flags, listen, print ``READY <url>``, serve until killed."""
    parser = argparse.ArgumentParser(description="OpenAI-compatible embedding server for tests")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--api-key", help="require `Authorization: Bearer <key>`")
    parser.add_argument("--delay-s", type=float, default=0.0, help="seconds every request waits before answering")
    config = parser.parse_args()
    server = EmbeddingServer(config.host, config.port, config.api_key)
    server.state.delay_s = config.delay_s
    print(f"READY {server.url}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
