"""Caps on what one request to a real `needle serve` may ask, and a big batch that does not starve anyone else.

``POST /search`` and the MCP query tools take at most ``MAX_QUERIES`` queries (10,000) and ``MAX_PASSAGES``
passages (queries x top_k, 1,000,000) per request: past either a 413 (a ``413:`` tool error on MCP) naming the
limit, at once. A batch of exactly 10,000 queries is served while ``GET /status`` keeps answering within a second
(the searches run in a thread pool, off the event loop). A lone surrogate anywhere in a JSON-RPC message is a 400.
"""

import json
import threading
import time
from typing import Any

import pytest

from components.checks import MAX_PASSAGES, MAX_QUERIES
from tests.support.serve import Answer, Server, shared_server

pytestmark = pytest.mark.integration
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


def queries(n: int) -> list[str]:
    return [f"query {i} about zip archives and threads" for i in range(n)]


def detail(answer: Answer) -> str:
    """The ``detail`` message of an error answer."""
    message: str = answer.json()["detail"]  # type: ignore[index]
    return message


def status_seconds(server: Server) -> float:
    """How long ``GET /status`` takes to answer 200."""
    started = time.monotonic()
    answer = server.request("GET", "/status", timeout=60)
    assert answer.status == 200
    return time.monotonic() - started


def tool_call(server: Server, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A raw JSON-RPC ``tools/call``; the JSON-RPC answer."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    answer = server.post_json("/mcp", message, MCP_HEADERS)
    assert answer.status == 200, answer.body[:300]
    reply: dict[str, Any] = answer.json()  # type: ignore[assignment]
    return reply


def tool_error(reply: dict[str, Any]) -> str:
    """The text of a tool error (fails if the call succeeded)."""
    assert reply["result"]["isError"] is True, str(reply)[:300]
    text: str = reply["result"]["content"][0]["text"]
    return text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("count", [MAX_QUERIES + 1, 200_000])
def test_more_than_max_queries_is_a_413_at_once(server: Server, count: int) -> None:
    started = time.monotonic()
    answer = server.post_json("/search", {"query_list": [f"q{i}" for i in range(count)], "top_k": 1})  # 200,000: 2 MB
    assert answer.status == 413, answer.body[:300]
    assert f"query_list has {count:,} queries; the limit is {MAX_QUERIES:,} per request" in detail(answer)
    assert time.monotonic() - started < 10  # refused before any search (200,000 queries took the old server >60 s)
    assert status_seconds(server) < 1


@pytest.mark.timeout(120)
def test_more_than_max_passages_is_a_413(server: Server) -> None:
    answer = server.post_json("/search", {"query_list": queries(101), "top_k": 10_000})
    assert answer.status == 413, answer.body[:300]
    assert f"ask for 1,010,000 passages; the limit is {MAX_PASSAGES:,} per request" in detail(answer)


@pytest.mark.timeout(600)
def test_status_answers_within_a_second_while_10000_queries_are_served(server: Server) -> None:
    assert server.post_json("/search", {"query_list": queries(2), "top_k": 2}).status == 200  # warm
    done: dict[str, Answer] = {}
    big = threading.Thread(
        target=lambda: done.setdefault("answer", server.post_json("/search", {"query_list": queries(MAX_QUERIES)}))
    )
    big.start()
    waits = []
    while big.is_alive():
        waits.append(status_seconds(server))
        time.sleep(0.2)
    big.join()
    answer = done["answer"]
    assert answer.status == 200, answer.body[:300]
    assert len(answer.json()["ret_psg"]) == MAX_QUERIES  # type: ignore[index]
    assert len(waits) >= 5, waits  # the batch ran long enough for /status to be asked while it did
    assert max(waits) < 1, waits


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("retriever_search", {"query_list": queries(MAX_QUERIES + 1)}, "query_list has 10,001 queries"),
        ("bm25_search", {"query_list": queries(MAX_QUERIES + 1)}, "query_list has 10,001 queries"),
        ("retriever_search", {"query_list": ["zip"] * 101, "top_k": 10_000}, "1,010,000 passages"),
        (
            "retriever_batch_search",
            {"batch_query_list": [queries(5_000), queries(5_001)]},
            "batch_query_list has 10,001 queries",
        ),
        ("retriever_batch_search", {"batch_query_list": [[]] * (MAX_QUERIES + 1)}, "has 10,001 queries"),
    ],
)
def test_mcp_tools_refuse_more_than_the_caps(server: Server, name: str, arguments: dict[str, Any], said: str) -> None:
    text = tool_error(tool_call(server, name, arguments))
    assert "413: " in text
    assert said in text


def surrogate_messages() -> dict[str, bytes]:
    """JSON-RPC messages with a lone surrogate (as a JSON escape) in one place each."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "bm25_search"}}
    places: dict[str, dict[str, Any]] = {
        "id": {**call, "id": "\ud800"},
        "method": {**call, "method": "tools/\udfff"},
        "tool name": {**call, "params": {"name": "\ud800"}},
        "argument value": {**call, "params": {"name": "bm25_search", "arguments": {"query_list": ["\ud800"]}}},
        "argument name": {**call, "params": {"name": "bm25_search", "arguments": {"\udc00": 1}}},
        "meta": {**call, "params": {"name": "bm25_search", "arguments": {}, "_meta": {"x": "a\ud800b"}}},
        "notification": {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"x": "\ud800"}},
        "response": {"jsonrpc": "2.0", "id": 1, "result": {"x": "\ud800"}},
    }
    return {place: json.dumps(message).encode("ascii") for place, message in places.items()}


@pytest.mark.parametrize("place", sorted(surrogate_messages()))
def test_a_lone_surrogate_anywhere_in_a_json_rpc_message_is_a_400(server: Server, place: str) -> None:
    body = surrogate_messages()[place]
    answer = server.request("POST", "/mcp", body, {"Content-Type": "application/json", **MCP_HEADERS})
    assert answer.status == 400, (place, answer.status, answer.body[:300])
    assert b"Traceback" not in answer.body
    assert status_seconds(server) < 1  # the connection and the server are fine
