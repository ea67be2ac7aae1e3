"""A small local rerank server that follows TEI's documented HTTP contract, for tests (stdlib only).

Routes, as TEI (text-embeddings-inference) serves them:
- ``POST /rerank`` ``{"query", "texts", "truncate"?, "return_text"?}`` -> ``[{"index", "score"}]`` sorted by
  score, best first. Errors are ``{"error", "error_type"}``: empty texts 400 ``empty``; more texts than
  ``--max-client-batch-size`` 413 ``validation``; a pair over ``--max-input-length`` tokens without ``truncate``
  413 ``validation``; a body that is not JSON 400 and one of the wrong type 422 (plain text, as TEI's axum does).
- ``POST /v1/rerank`` ``{"query", "documents"}`` -> ``{"results": [{"index", "relevance_score"}]}`` (Cohere shape,
  as Infinity serves it).
- ``GET /health``, ``GET /info`` (``max_client_batch_size``, ``max_input_length``).

Scores are a lexical overlap: the share of the query's distinct words found in the text (0..1). With
``--upstream URL`` the server instead forwards both rerank routes to a real server (e.g. Infinity) and acts as a
gateway that enforces the batch limit and injects faults, so one test suite runs against both.

Test controls: ``POST /_faults`` ``{"fail": [{"status": 429, "error_type": "overloaded", "retry_after": 0}],
"malformed": MODE, "malformed_count": 1, "delay_s": 0}`` queues failures for the next requests (MODE is one of
``MALFORMED_MODES``) and slows every rerank request down by ``delay_s``. ``GET /_log`` returns
``{"requests": [{"path", "n_texts", "status"}], "max_in_flight": n}``; ``POST /_reset`` forgets it all.

    python tests/support/servers/tei.py --port 0 [--max-client-batch-size 32] [--upstream http://127.0.0.1:7997]
        [--api-key K] [--certfile C --keyfile K [--client-ca CA]]

Prints ``READY <base url>`` on stdout once it listens.
"""

import argparse
import json
import re
import ssl
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MALFORMED_MODES = (
    "duplicate-index",
    "missing-result",
    "index-out-of-range",
    "nan-score",
    "string-score",
    "not-json",
    "empty-array",
)
WORD = re.compile(r"\w+")


def overlap(query: str, text: str) -> float:
    """Share of the query's distinct words that appear in the text."""
    wanted = set(WORD.findall(query.lower()))
    return len(wanted & set(WORD.findall(text.lower()))) / len(wanted) if wanted else 0.0


class State:
    """What the tests control and observe: queued faults and a log of rerank requests."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget faults and the log."""
        self.failures: list[dict] = []
        self.malformed: str | None = None
        self.malformed_count = 0
        self.delay_s = 0.0
        self.log: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def next_failure(self) -> dict | None:
        """Pop the next queued failure, if any."""
        with self.lock:
            return self.failures.pop(0) if self.failures else None

    def next_malformed(self) -> str | None:
        """The malformation to apply to this answer, if one is still queued."""
        with self.lock:
            if self.malformed_count <= 0:
                return None
            self.malformed_count -= 1
            return self.malformed


def corrupt(entries: list[dict], score_key: str, mode: str) -> list[dict] | None:
    """Break a valid list of ranked entries the way ``mode`` says (None means: send non-JSON)."""
    entries = [dict(entry) for entry in entries]
    if mode == "duplicate-index" and len(entries) > 1:
        entries[1]["index"] = entries[0]["index"]
    elif mode in ("duplicate-index", "index-out-of-range"):
        entries[0]["index"] = len(entries)
    elif mode == "missing-result":
        entries.pop()
    elif mode == "nan-score":
        entries[0][score_key] = float("nan")
    elif mode == "string-score":
        entries[0][score_key] = "high"
    elif mode == "empty-array":
        entries = []
    elif mode == "not-json":
        return None
    return entries


class Handler(BaseHTTPRequestHandler):
    """Serves the routes above; configuration lives on the server object."""

    server: "RerankServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send(
        self, status: int, body: Any, content_type: str = "application/json", headers: dict | None = None
    ) -> None:
        data = (
            body
            if isinstance(body, bytes)
            else (json.dumps(body) if content_type == "application/json" else body).encode()
        )
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, error_type: str, headers: dict | None = None) -> None:
        self._send(status, {"error": message, "error_type": error_type}, headers=headers)

    def _read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def do_GET(self) -> None:
        """Health, info and the request log."""
        state, config = self.server.state, self.server.config
        if self.path == "/health":
            self._send(200, b"", "text/plain")
        elif self.path == "/info":
            self._send(200, {"model_id": config.upstream or "lexical-overlap", **self.server.limits()})
        elif self.path == "/_log":
            with state.lock:
                self._send(200, {"requests": list(state.log), "max_in_flight": state.max_in_flight})
        else:
            self._send(404, b"Not Found", "text/plain")

    def do_POST(self) -> None:
        """Test controls and the two rerank routes."""
        body = self._read_body()
        if self.path == "/_reset":
            with self.server.state.lock:
                self.server.state.reset()
            return self._send(200, {})
        if self.path == "/_faults":
            return self._set_faults(json.loads(body))
        if self.path not in ("/rerank", "/v1/rerank"):
            return self._send(404, b"Not Found", "text/plain")
        state = self.server.state
        with state.lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        status = 500  # what the log says if handling fails before an answer
        try:
            time.sleep(state.delay_s)
            status = self._rerank(body)
        finally:
            with state.lock:
                state.in_flight -= 1
                state.log.append({"path": self.path, "n_texts": self._n_texts(body), "status": status})

    def _set_faults(self, plan: dict) -> None:
        state = self.server.state
        if plan.get("malformed") not in (None, *MALFORMED_MODES):
            self._send(400, {"error": f"malformed must be one of {MALFORMED_MODES}"})
            return
        with state.lock:
            state.failures = list(plan.get("fail", []))
            state.malformed = plan.get("malformed")
            state.malformed_count = int(plan.get("malformed_count", 1 if state.malformed else 0))
            state.delay_s = float(plan.get("delay_s", 0.0))
        self._send(200, {})

    def _n_texts(self, body: bytes) -> int | None:
        try:
            request = json.loads(body)
            return len(request.get("texts", request.get("documents", [])))
        except (ValueError, AttributeError, TypeError):
            return None

    def _rerank(self, body: bytes) -> int:
        """Validate like TEI, apply queued faults, then score (or forward); returns the status sent."""
        config, cohere = self.server.config, self.path == "/v1/rerank"
        if config.api_key and self.headers.get("Authorization") != f"Bearer {config.api_key}":
            self._error(401, "Unauthorized", "unauthorized")
            return 401
        if self.headers.get("Content-Type", "").split(";")[0] != "application/json":
            self._send(415, "Expected request with `Content-Type: application/json`", "text/plain")
            return 415
        try:
            request = json.loads(body)
        except ValueError as exc:
            self._send(400, f"Failed to parse the request body as JSON: {exc}", "text/plain")
            return 400
        texts = request.get("documents" if cohere else "texts") if isinstance(request, dict) else None
        if (
            not isinstance(texts, list)
            or not isinstance(request.get("query"), str)
            or not all(isinstance(t, str) for t in texts)
        ):
            field = "documents" if cohere else "texts"
            self._send(
                422,
                f"Failed to deserialize the JSON body into the target type: `query` must be a string "
                f"and `{field}` a list of strings",
                "text/plain",
            )
            return 422
        refusal = self._refusal(request, texts)
        if refusal:
            self._error(*refusal)
            return refusal[0]
        failure = self.server.state.next_failure()
        if failure:
            headers = {"Retry-After": str(failure["retry_after"])} if "retry_after" in failure else None
            self._error(
                failure["status"],
                failure.get("error", "injected failure"),
                failure.get("error_type", "overloaded"),
                headers,
            )
            return failure["status"]
        return self._forward(body) if config.upstream else self._answer(request["query"], texts, cohere)

    def _refusal(self, request: dict, texts: list[str]) -> tuple[int, str, str] | None:
        """TEI's own refusals: empty batch, batch over the limit, pair too long without truncation."""
        limit = self.server.config.max_client_batch_size
        if not texts:
            return 400, "`texts` cannot be empty", "empty"
        if len(texts) > limit:
            return 413, f"batch size {len(texts)} > maximum allowed batch size {limit}", "validation"
        if not request.get("truncate", False) and not self.server.config.upstream:
            max_tokens = self.server.config.max_input_length
            query_tokens = len(WORD.findall(request["query"]))
            for text in texts:
                given = query_tokens + len(WORD.findall(text))
                if given > max_tokens:
                    return (
                        413,
                        f"Input validation error: `inputs` must have less than {max_tokens} tokens. Given: {given}",
                        "validation",
                    )
        return None

    def _answer(self, query: str, texts: list[str], cohere: bool) -> int:
        """Score lexically, sort best first as TEI does, and send (possibly corrupted) entries."""
        key = "relevance_score" if cohere else "score"
        entries = sorted(({"index": i, key: overlap(query, t)} for i, t in enumerate(texts)), key=lambda e: -e[key])
        return self._reply(entries, key, cohere)

    def _reply(self, entries: list[dict], key: str, cohere: bool) -> int:
        mode = self.server.state.next_malformed()
        if mode:
            entries = corrupt(entries, key, mode)
            if entries is None:
                self._send(200, b"<html>upstream hiccup</html>", "text/html")
                return 200
        self._send(200, {"object": "rerank", "results": entries} if cohere else entries)
        return 200

    def _forward(self, body: bytes) -> int:
        """Pass the request to the upstream server; corrupt its answer if a malformation is queued."""
        headers = {"Content-Type": "application/json"}
        if self.headers.get("Authorization"):
            headers["Authorization"] = self.headers["Authorization"]
        request = urllib.request.Request(self.server.config.upstream + self.path, data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            self._send(exc.code, exc.read(), exc.headers.get("Content-Type", "text/plain"))
            return exc.code
        cohere = isinstance(answer, dict)
        key = "relevance_score" if cohere else "score"
        entries = answer["results"] if cohere else answer
        return self._reply([{"index": e["index"], key: e[key]} for e in entries], key, cohere)


class RerankServer(ThreadingHTTPServer):
    """The HTTP server, holding the configuration and the shared test state."""

    daemon_threads = True

    def __init__(self, config: argparse.Namespace) -> None:
        super().__init__((config.host, config.port), Handler)
        self.config = config
        self.state = State()

    def limits(self) -> dict:
        """What ``/info`` reports."""
        return {
            "max_client_batch_size": self.config.max_client_batch_size,
            "max_input_length": self.config.max_input_length,
        }


def main() -> None:
    """Parse flags, listen (optionally with TLS), print ``READY <url>``, serve until killed."""
    parser = argparse.ArgumentParser(description="TEI-protocol rerank server for tests")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--max-client-batch-size", type=int, default=32)
    parser.add_argument("--max-input-length", type=int, default=512, help="words per (query, text) pair")
    parser.add_argument("--upstream", help="forward rerank requests to this base URL instead of scoring")
    parser.add_argument("--api-key", help="require `Authorization: Bearer <key>`")
    parser.add_argument("--certfile", help="serve https with this certificate (PEM)")
    parser.add_argument("--keyfile", help="the certificate's private key (PEM)")
    parser.add_argument("--client-ca", help="require client certificates signed by this CA (mutual TLS)")
    config = parser.parse_args()
    server = RerankServer(config)
    scheme = "http"
    if config.certfile:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(config.certfile, config.keyfile)
        if config.client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(config.client_ca)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    print(f"READY {scheme}://{config.host}:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
