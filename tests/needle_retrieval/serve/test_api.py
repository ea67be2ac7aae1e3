"""Bad input to `needle serve` is a 4xx with a message in every mode, never a 500 (issue 8: 50 of 200 were).

Against one real server: an explicit list of bad bodies sent to every pipeline, the size caps (413 before an
oversized body is read), 200 mixed good and bad requests, and schemathesis generating requests from the server's
own /openapi.json, valid and invalid, each answered as the schema declares. Every answer must be below 500 and every
refusal must say why.
"""

import contextlib
import json
import random
import socket
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode, checks

from needle_retrieval.serve.app import MAX_BODY_BYTES
from tests.support.serve import (
    ALL_PIPELINES,
    Server,
    sample_index,
    shared_server,
    tree,
    tree_before_serving,
)

pytestmark = pytest.mark.integration
PIPELINES = sorted(ALL_PIPELINES)
JSON = {"Content-Type": "application/json"}
MiB = 1 << 20

# (label, raw body, expected status): what a broken client, a fuzzer or a hostile page might send.
BAD_BODIES = [
    ("empty query", b'{"query": ""}', 422),
    ("blank query", b'{"query": " \\t\\n "}', 422),
    ("lone high surrogate", b'{"query": "\\ud800"}', 422),
    ("lone low surrogate inside text", b'{"query": "zip \\udfff files"}', 422),
    ("query over 1 MiB characters", json.dumps({"query": "a" * (MiB + 1)}).encode(), 413),
    ("5 MB body", json.dumps({"query": "zip " * 1_250_000}).encode(), 413),
    ("top_k zero", b'{"query": "zip", "top_k": 0}', 422),
    ("top_k negative", b'{"query": "zip", "top_k": -3}', 422),
    ("top_k too large", b'{"query": "zip", "top_k": 10001}', 422),
    ("top_k string", b'{"query": "zip", "top_k": "5"}', 422),
    ("top_k float", b'{"query": "zip", "top_k": 2.5}', 422),
    ("top_k bool", b'{"query": "zip", "top_k": true}', 422),
    ("unknown field", b'{"query": "zip", "filters": {"field": "meta.x"}}', 422),
    ("query missing", b"{}", 422),
    ("query null", b'{"query": null}', 422),
    ("query number", b'{"query": 42}', 422),
    ("query list", b'{"query": ["zip"]}', 422),
    ("body is a list", b'["zip"]', 422),
    ("body is a string", b'"zip"', 422),
    ("invalid JSON", b'{"query": ', 422),
    ("empty body", b"", 422),
    ("invalid UTF-8 bytes", b'{"query": "\xff\xfe zip"}', 400),
    ("nested 100000 deep", b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400),
]


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


@pytest.mark.parametrize("name", PIPELINES)
@pytest.mark.parametrize(("label", "body", "status"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_input_is_refused_with_a_message(server: Server, name: str, label: str, body: bytes, status: int) -> None:
    answer = server.request("POST", f"/{name}/run", body, JSON)
    assert answer.status == status, (label, answer.status, answer.body[:300])
    detail = answer.json()["detail"]
    assert detail
    assert "\n" not in json.dumps(detail)
    assert "Traceback" not in json.dumps(detail)


def test_oversized_body_is_refused_before_it_is_read(server: Server) -> None:
    """A client that declares 100 MiB and sends nothing still gets its 413 at once."""
    import http.client

    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        conn.putrequest("POST", "/hybrid_search/run")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(100 * MiB))
        conn.endheaders()
        resp = conn.getresponse()
        assert resp.status == 413
        assert "limit" in json.loads(resp.read())["detail"]
    finally:
        conn.close()


def test_chunked_body_over_the_limit_is_refused(server: Server) -> None:
    """No Content-Length to go by: the server counts the chunks and answers 413 at the first byte over the limit
    (it may close while the client is still sending, so the answer is read from a raw socket)."""
    with socket.create_connection((server.host, server.port), timeout=60) as sock:
        host = f"{server.host}:{server.port}".encode()  # a local Host name: others get a 400 before the body
        head = b"POST /dense_search/run HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n" % host
        sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for _ in range(MAX_BODY_BYTES // MiB + 2):
                sock.sendall(b"%x\r\n%s\r\n" % (MiB, b"a" * MiB))
        answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"limit" in answer, answer[:300]


def read_answer(sock: socket.socket) -> bytes:
    """Read one HTTP answer (head and Content-Length body) from a raw socket."""
    answer = b""
    while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < content_length(answer):
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    return answer


def content_length(answer: bytes) -> int:
    """The Content-Length of an answer's head (0 when absent)."""
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def test_query_of_exactly_the_limit_is_answered(server: Server) -> None:
    query = ("zip file " * (MiB // 9 + 1))[:MiB]
    answer = server.post_json("/bm25_search/run", {"query": query, "top_k": 1})
    assert answer.status == 200
    assert len(answer.json()["result"]["retriever"]["documents"]) == 1


def test_mixed_traffic_has_no_server_errors(server: Server) -> None:
    """200 requests, about half bad, spread over the four pipelines: zero 5xx, and every good one answers."""
    rng = random.Random(8)
    good = [
        b'{"query": "read and write ZIP files"}',
        b'{"query": "\\u6587\\u4ef6 zip", "top_k": 3}',
        b'{"query": "x"}',
        b'{"query": "socket server", "top_k": 10000}',
    ]
    small_bad = [body for _, body, _ in BAD_BODIES if len(body) < 1000]
    statuses = []
    for _ in range(200):
        ok = rng.random() < 0.5
        body = rng.choice(good if ok else small_bad)
        answer = server.request("POST", f"/{rng.choice(PIPELINES)}/run", body, JSON)
        statuses.append(answer.status)
        assert answer.status < 500, (body, answer.status, answer.body[:300])
        assert (answer.status == 200) == ok, (body, answer.status, answer.body[:300])
    assert statuses.count(200) > 50
    assert len(statuses) - statuses.count(200) > 50


# Schema-breaking requests need something to break: /status takes nothing, /status/{name} only a path string.
OPERATIONS = [
    ("POST", path, mode) for path in [*(f"/{name}/run" for name in PIPELINES), "/search"] for mode in GenerationMode
]
OPERATIONS += [("GET", "/status", GenerationMode.POSITIVE), ("GET", "/status/{pipeline_name}", GenerationMode.POSITIVE)]
# What the schema promises, checked on every answer: no 5xx, only declared statuses, content types and bodies, valid
# requests accepted (2xx, or 404 for a pipeline or collection name not served) and invalid ones refused.
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.positive_data_acceptance,
    checks.negative_data_rejection,
]
# schemathesis's list of refusals, with 413: the declared answer to a body, query or list over its size limit.
REFUSALS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]
CONFIG = {"checks": {"negative_data_rejection": {"expected-statuses": REFUSALS}}}


def api_schema(server: Server) -> schemathesis.BaseSchema:
    """A server's own OpenAPI document, as schemathesis reads it, with the refusals above."""
    config = schemathesis.Config.from_dict(CONFIG)
    return schemathesis.openapi.from_url(f"http://{server.host}:{server.port}/openapi.json", config=config, timeout=30)


def conforms(
    server: Server, operation: schemathesis.APIOperation[Any, Any, Any, Any], mode: GenerationMode, examples: int
) -> None:
    """EXAMPLES requests made from OPERATION's schema in MODE (valid ones, or ones that break it), each answered as the
    schema says (``CHECKS``)."""
    base_url = f"http://{server.host}:{server.port}"

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
    )
    def answered_as_declared(case: schemathesis.Case[Any]) -> None:
        case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=60)

    answered_as_declared()


@pytest.mark.parametrize(("method", "path", "mode"), OPERATIONS)
def test_generated_requests_are_answered_as_the_schema_says(
    server: Server, method: str, path: str, mode: GenerationMode
) -> None:
    """25 requests per operation and mode: before, a schema-valid empty query was refused, a body that was not UTF-8
    got an undeclared 400, an unknown pipeline an undeclared 404, and ``top_k: 5.0`` (an integer in JSON Schema) a
    422."""
    conforms(server, api_schema(server)[path][method], mode, examples=25)


def test_index_directory_is_unchanged_by_serving(server: Server, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert tree(sample_index(tmp_path_factory)) == tree_before_serving()
