"""Local servers that speak the documented web search APIs of Exa, Tavily and ZhipuAI, for tests (stdlib only).

- Exa: ``POST /search``, key in ``x-api-key``, body ``{query, numResults, type?, contents: {text}}`` ->
  ``{requestId, resolvedSearchType, results: [{title, url, id, publishedDate, author, score, text}]}``; errors
  ``{requestId, error, tag}`` (400, 401, 402, 429, 5xx).
- Tavily: ``POST /search``, ``Authorization: Bearer KEY``, body ``{query, max_results, search_depth?, topic?, ...}``
  -> ``{query, answer, images, results: [{title, url, content, score, raw_content}], response_time}``; errors
  ``{detail: {error}}`` (400, 401, 429, 432 plan limit, 433 pay-as-you-go limit, 500).
- ZhipuAI: ``POST /api/paas/v4/web_search``, ``Authorization: Bearer KEY``, body ``{search_query (<= 70
  characters), search_engine, count (1..50), search_intent?, search_recency_filter?, content_size?, ...}`` ->
  ``{id, created, request_id, search_intent: [...], search_result: [{title, content, link, media, icon, refer,
  publish_date}]}``; errors ``{error: {code, message}}`` (400, 401, 429, 500).

Hits are deterministic: hit ``i`` (from 1) of query ``q`` has title ``"<q> #i"``, URL
``https://example.com/<provider>/<q>/<i>`` and text ``"Passage i about <q>."``; Zhipu's hits carry no score.

Test controls, on ``server.state``: ``fail`` queues statuses for the next requests; ``fail_queries`` maps a query
to the status it always gets; ``delay_s`` delays every answer (interrupted when the server stops);
``malformed`` makes every 200 answer lack its result list. ``log`` records each request (path, headers, body) and
``max_in_flight`` the most requests handled at once.
"""

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "test-key"
ZHIPU_PATH = "/api/paas/v4/web_search"
ZHIPU_MAX_QUERY = 70


class State:
    """What tests control and observe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.fail: list[int] = []
        self.fail_queries: dict[str, int] = {}
        self.delay_s = 0.0
        self.malformed = False
        self.log: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def enter(self, entry: dict[str, Any]) -> int | None:
        """Record a request; return the status it must fail with (queued or per query), if any."""
        with self.lock:
            self.log.append(entry)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            queued = self.fail.pop(0) if self.fail else None
        query = entry["body"].get("query", entry["body"].get("search_query"))
        return queued if queued is not None else self.fail_queries.get(str(query))

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1


def hits(provider: str, query: str, count: int) -> list[dict[str, Any]]:
    """The ``count`` deterministic hits for ``query`` in a neutral shape (title, url, text, score)."""
    return [
        {
            "title": f"{query} #{i}",
            "url": f"https://example.com/{provider}/{query}/{i}",
            "text": f"Passage {i} about {query}.",
            "score": round(1.0 - i / 100, 4),
        }
        for i in range(1, count + 1)
    ]


def exa(path: str, headers: dict[str, str], body: dict[str, Any], status: int | None) -> tuple[int, Any]:
    """Exa's ``/search``."""
    request_id = uuid.uuid4().hex
    if path != "/search":
        return 404, {"requestId": request_id, "error": f"Route {path} not found", "tag": "NOT_FOUND"}
    if headers.get("x-api-key") != API_KEY:
        return 401, {"requestId": request_id, "error": "Invalid API key", "tag": "INVALID_API_KEY"}
    if status is not None:
        return status, {"requestId": request_id, "error": f"Injected failure {status}", "tag": "INJECTED"}
    if not isinstance(body.get("query"), str) or not body["query"]:
        return 400, {"requestId": request_id, "error": "query is required", "tag": "INVALID_REQUEST_BODY"}
    results = [
        {"id": h["url"], "title": h["title"], "url": h["url"], "publishedDate": "2025-01-01T00:00:00.000Z",
         "author": None, "score": h["score"], "text": h["text"]}
        for h in hits("exa", body["query"], int(body.get("numResults", 10)))
    ]  # fmt: skip
    return 200, {"requestId": request_id, "resolvedSearchType": "neural", "results": results}


def tavily(path: str, headers: dict[str, str], body: dict[str, Any], status: int | None) -> tuple[int, Any]:
    """Tavily's ``/search``."""
    if path != "/search":
        return 404, {"detail": {"error": "Not Found"}}
    if headers.get("authorization") != f"Bearer {API_KEY}":
        return 401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}
    messages = {
        429: "Your request has been blocked due to excessive requests. Please reduce rate of requests.",
        432: "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support.",
        433: "This request exceeds the pay-as-you-go limit. You can increase your limit on the Tavily dashboard.",
    }
    if status is not None:
        return status, {"detail": {"error": messages.get(status, f"Injected failure {status}")}}
    max_results = int(body.get("max_results", 5))
    if not isinstance(body.get("query"), str) or not 0 <= max_results <= 20:
        return 400, {"detail": {"error": "Invalid request: query is required and max_results must be 0..20"}}
    results = [
        {"title": h["title"], "url": h["url"], "content": h["text"], "score": h["score"], "raw_content": None}
        for h in hits("tavily", body["query"], max_results)
    ]
    return 200, {"query": body["query"], "answer": None, "images": [], "results": results, "response_time": 0.01}


def zhipuai(path: str, headers: dict[str, str], body: dict[str, Any], status: int | None) -> tuple[int, Any]:
    """ZhipuAI's ``/api/paas/v4/web_search``."""
    if path != ZHIPU_PATH:
        return 404, {"error": {"code": "404", "message": f"{path} not found"}}
    if headers.get("authorization") != f"Bearer {API_KEY}":
        return 401, {"error": {"code": "1000", "message": "身份验证失败。(authentication failed)"}}
    messages = {429: "您的账户已达到速率限制。(rate limit reached)", 500: "服务内部错误 (internal error)"}
    if status is not None:
        return status, {"error": {"code": str(status), "message": messages.get(status, f"Injected {status}")}}
    query, count = body.get("search_query"), body.get("count", 10)
    if not isinstance(query, str) or not 1 <= len(query) <= ZHIPU_MAX_QUERY or not 1 <= count <= 50:
        return 400, {"error": {"code": "1214", "message": "search_query must be 1..70 characters, count 1..50"}}
    results = [
        {"title": h["title"], "content": h["text"], "link": h["url"], "media": "example", "icon": "",
         "refer": f"ref_{i}", "publish_date": "2025-01-01"}
        for i, h in enumerate(hits("zhipuai", query, count), start=1)
    ]  # fmt: skip
    intent = [{"query": query, "intent": "SEARCH_ALL", "keywords": query}]
    return 200, {"id": uuid.uuid4().hex, "created": int(time.time()), "request_id": uuid.uuid4().hex,
                 "search_intent": intent, "search_result": results}  # fmt: skip


PROVIDERS = {"exa": exa, "tavily": tavily, "zhipuai": zhipuai}
RESULT_KEYS = {"exa": "results", "tavily": "results", "zhipuai": "search_result"}


def make_handler(provider: str, state: State) -> type[BaseHTTPRequestHandler]:
    """A request handler answering as ``provider`` does."""
    answer = PROVIDERS[provider]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self.send(400, {"error": "body is not JSON"})
                return
            headers = {key.lower(): value for key, value in self.headers.items()}
            status = state.enter({"path": self.path, "headers": headers, "body": body})
            try:
                if state.delay_s:
                    state.stop.wait(state.delay_s)
                code, payload = answer(self.path, headers, body, status)
                if code == 200 and state.malformed:
                    payload.pop(RESULT_KEYS[provider], None)
                self.send(code, payload)
            finally:
                state.leave()

        def send(self, code: int, payload: Any) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    return Handler


@contextmanager
def serve(provider: str) -> Iterator[tuple[str, State]]:
    """Run ``provider``'s server on a free port of 127.0.0.1; yield its base URL and state; stop it after."""
    state = State()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(provider, state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=f"{provider}-server", daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield (f"{base}/api/paas/v4" if provider == "zhipuai" else base), state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
