"""TEIRanker against real servers on 127.0.0.1.

One suite runs against two backends:
- ``tei``: tests/support/servers/tei.py, which follows TEI's ``/rerank`` contract and scores by word overlap;
- ``infinity``: a real Infinity server (``infinity_emb v2`` from ``.venv-infinity``) serving a MiniLM
  cross-encoder on ``/v1/rerank``, reached through tei.py in gateway mode (``--upstream``), which enforces
  the same 32-text limit and injects the same faults (429s, malformed answers) without touching the scores.
Infinity needs its own venv (it pins numpy<2); without it those cases skip, saying how to create it.
"""

import os
import select
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.utils import Secret

import components  # noqa: F401 - registers our modules with Haystack's deserialization allowlist
from components.rankers import LocalCrossEncoderRanker, RerankServerError, TEIRanker, create_reranker
from tests.support.paths import INFINITY, SERVERS
from tests.support.servers import tei as tei_server

from .test_local_cross_encoder import minilm_cross_encoder  # noqa: F401 - session fixture: the model Infinity serves

SERVER = SERVERS / "tei.py"
KEY_ENV = "NEEDLE_TEST_RERANK_KEY"
KEY = "test-key-7f3a"
QUERY = "how do cats purr"
TEXTS = [f"note {i}: cats purr when content" if i % 3 == 0 else f"note {i}: dogs bark at night" for i in range(100)]


@pytest.fixture(scope="module", autouse=True)
def api_key_in_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, KEY)
        yield


@contextmanager
def serve(*args: str) -> Iterator[str]:
    """Run tests/support/servers/tei.py with ``args``; yield its base URL; stop it afterwards."""
    proc = subprocess.Popen([sys.executable, str(SERVER), "--port", "0", *args], stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("READY "):
            pytest.fail(f"tei.py did not start (exit code {proc.poll()}, said {line!r})")
        yield line.split()[1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def infinity(minilm_cross_encoder: str, tmp_path_factory) -> Iterator[str]:  # noqa: F811
    """A real Infinity server on 127.0.0.1 serving the MiniLM cross-encoder; yields its base URL."""
    if not INFINITY.exists():
        pytest.skip(
            "Infinity is not installed: python3 -m venv .venv-infinity && .venv-infinity/bin/pip install "
            "torch==2.13.0 && .venv-infinity/bin/pip install 'infinity-emb[server,torch]'"
        )
    port = free_port()
    log = tmp_path_factory.mktemp("infinity") / "infinity.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
    command = [str(INFINITY), "v2", "--model-id", minilm_cross_encoder, "--host", "127.0.0.1", "--port", str(port)]
    command += ["--url-prefix", "/v1", "--api-key", KEY, "--device", "cpu", "--engine", "torch"]
    command += ["--no-model-warmup", "--no-vector-disk-cache", "--log-level", "warning"]
    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while not _healthy(base):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"Infinity did not come up (exit code {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@dataclass
class Backend:
    """A rerank endpoint under test, its control URL and the scores it should give."""

    name: str
    base: str
    url: str
    expected: Callable[[str, list[str]], np.ndarray]
    checks_key_at: str  # the URL of the server that checks the API key (the gateway passes it through)

    def ranker(self, **kwargs) -> TEIRanker:
        return TEIRanker(self.url, api_key=Secret.from_env_var(KEY_ENV), backoff=0.01, **kwargs)

    def faults(self, **plan) -> None:
        httpx.post(f"{self.base}/_faults", json=plan).raise_for_status()

    def log(self) -> dict:
        return httpx.get(f"{self.base}/_log").json()


def lexical(query: str, texts: list[str]) -> np.ndarray:
    return np.array([tei_server.overlap(query, text) for text in texts], dtype=np.float32)


@pytest.fixture(scope="module", params=["tei", pytest.param("infinity", marks=pytest.mark.integration)])
def backend(request) -> Iterator[Backend]:
    if request.param == "tei":
        with serve("--api-key", KEY) as base:
            yield Backend("tei", base, f"{base}/rerank", lexical, f"{base}/rerank")
        return
    upstream = request.getfixturevalue("infinity")
    local = LocalCrossEncoderRanker(
        request.getfixturevalue("minilm_cross_encoder"), activation="sigmoid", use_fp16=False
    )
    with serve("--upstream", upstream) as base:
        yield Backend("infinity", base, f"{base}/v1/rerank", local.rerank, f"{upstream}/v1/rerank")


@pytest.fixture(autouse=True)
def fresh_server_state(request) -> None:
    if "backend" in request.fixturenames:
        httpx.post(f"{request.getfixturevalue('backend').base}/_reset").raise_for_status()


def test_100_texts_go_out_in_batches_of_at_most_32_and_come_back_in_input_order(backend):
    scores = backend.ranker(max_batch_size=32).rerank(QUERY, TEXTS, batch_size=100)
    np.testing.assert_allclose(scores, backend.expected(QUERY, TEXTS), atol=1e-4)
    assert len(set(np.round(scores, 4))) > 1, "scores must differ, or a mix-up of order would go unseen"
    requests = backend.log()["requests"]
    assert sorted(r["n_texts"] for r in requests) == [4, 32, 32, 32]
    assert {r["status"] for r in requests} == {200}


def test_a_batch_over_the_server_limit_is_refused_with_the_servers_own_message(backend):
    with pytest.raises(RerankServerError, match=r"HTTP 413.*batch size 64 > maximum allowed batch size 32") as refused:
        backend.ranker(max_batch_size=64).rerank(QUERY, TEXTS[:64], batch_size=64)
    assert refused.value.status == 413


def test_a_429_is_retried_and_then_succeeds(backend):
    backend.faults(fail=[{"status": 429, "error_type": "overloaded", "retry_after": 0}])
    scores = backend.ranker().rerank(QUERY, TEXTS[:5])
    np.testing.assert_allclose(scores, backend.expected(QUERY, TEXTS[:5]), atol=1e-4)
    assert [r["status"] for r in backend.log()["requests"]] == [429, 200]


def test_503_until_the_retries_run_out_raises_with_status_and_message(backend):
    backend.faults(fail=[{"status": 503, "error": "model is loading", "error_type": "unhealthy"}] * 3)
    with pytest.raises(RerankServerError, match=r"HTTP 503 .*attempt 3\): model is loading \(unhealthy\)") as failed:
        backend.ranker(max_retries=2).rerank(QUERY, TEXTS[:5])
    assert failed.value.status == 503
    assert len(backend.log()["requests"]) == 3


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("duplicate-index", "appears more than once"),
        ("missing-result", "sent 5 texts but got 4 results"),
        ("index-out-of-range", r"expected an integer in \[0, 4\]"),
        ("nan-score", "expected a finite number"),
        ("string-score", "'high', expected a finite number"),
        ("not-json", "not JSON: '<html>"),
        ("empty-array", "sent 5 texts but got 0 results"),
    ],
)
def test_a_malformed_answer_raises_and_never_yields_an_empty_result(backend, mode, message):
    backend.faults(malformed=mode)
    with pytest.raises(RerankServerError, match=message):
        backend.ranker().rerank(QUERY, TEXTS[:5])


def test_requests_in_flight_never_exceed_max_concurrency(backend):
    backend.faults(delay_s=0.2)
    backend.ranker(max_batch_size=4, max_concurrency=3).rerank(QUERY, TEXTS[:32])
    assert 2 <= backend.log()["max_in_flight"] <= 3
    httpx.post(f"{backend.base}/_reset")
    backend.faults(delay_s=0.05)
    backend.ranker(max_batch_size=4, max_concurrency=1).rerank(QUERY, TEXTS[:12])
    assert backend.log()["max_in_flight"] == 1


async def test_run_and_run_async_return_new_documents_best_first(backend):
    docs = [Document(content=text, meta={"n": i}) for i, text in enumerate(TEXTS[:10])]
    ranker = backend.ranker(top_k=4)
    expected = np.argsort(-backend.expected(QUERY, TEXTS[:10]), kind="stable")[:4]
    for result in (await ranker.run_async(query=QUERY, documents=docs), ranker.run(query=QUERY, documents=docs)):
        ranked = result["documents"]
        assert [d.score for d in ranked] == sorted((d.score for d in ranked), reverse=True)
        np.testing.assert_allclose([d.score for d in ranked], backend.expected(QUERY, TEXTS[:10])[expected], atol=1e-4)
    assert all(d.score is None for d in docs)


def test_a_wrong_api_key_is_refused(backend):
    with pytest.raises(RerankServerError, match="HTTP 401") as refused:
        TEIRanker(backend.checks_key_at, api_key=Secret.from_token("wrong"), max_retries=0).rerank(QUERY, TEXTS[:2])
    assert refused.value.status == 401


def test_long_pairs_are_refused_without_truncate_and_accepted_with_it():
    with serve() as base:
        long_text = "word " * 600
        with pytest.raises(RerankServerError, match=r"HTTP 413.*must have less than 512 tokens. Given: 604"):
            TEIRanker(f"{base}/rerank", truncate=False).rerank(QUERY, [long_text])
        assert TEIRanker(f"{base}/rerank").rerank(QUERY, [long_text]).shape == (1,)


def test_an_unreachable_server_fails_after_the_retries():
    url = f"http://127.0.0.1:{free_port()}/rerank"
    with pytest.raises(RerankServerError, match=r"could not reach .* after 3 attempt\(s\): ConnectError"):
        TEIRanker(url, max_retries=2, backoff=0.01).rerank(QUERY, ["x"])


async def test_sync_run_works_inside_a_running_event_loop():
    with serve() as base:
        result = TEIRanker(f"{base}/rerank").run(
            query="cats", documents=[Document(content="cats"), Document(content="x")]
        )
    assert [d.content for d in result["documents"]] == ["cats", "x"]


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory) -> dict[str, str]:
    """A throw-away CA, a server certificate for 127.0.0.1 and a client certificate, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    d = tmp_path_factory.mktemp("tls")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=needle test CA")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, extra in (("server", ["-extfile", "san.ext"]), ("client", [])):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.pem",
            "-days",
            "1",
            *extra,
        )
    files = {
        "ca": "ca.pem",
        "server": "server.pem",
        "server_key": "server.key",
        "client": "client.pem",
        "client_key": "client.key",
    }
    return {name: str(d / file) for name, file in files.items()}


def test_https_with_a_ca_file_and_a_client_certificate(tls_files):
    with serve(
        "--certfile", tls_files["server"], "--keyfile", tls_files["server_key"], "--client-ca", tls_files["ca"]
    ) as base:
        assert base.startswith("https://")
        url = f"{base}/rerank"
        ranker = TEIRanker(
            url, ca_file=tls_files["ca"], client_cert=tls_files["client"], client_key=tls_files["client_key"]
        )
        np.testing.assert_allclose(ranker.rerank("cats", ["cats", "dogs"]), [1.0, 0.0])
        with pytest.raises(RerankServerError, match=r"after 1 attempt\(s\).*CERTIFICATE_VERIFY_FAILED"):
            TEIRanker(url, client_cert=tls_files["client"], client_key=tls_files["client_key"]).rerank("cats", ["x"])
        with pytest.raises(RerankServerError, match=r"could not reach"):
            TEIRanker(url, ca_file=tls_files["ca"], max_retries=0).rerank("cats", ["x"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "http://host:8080/embed"}, "must end with /rerank"),
        ({"url": "ftp://host/rerank"}, "must start with http:// or https://"),
        ({"max_batch_size": 0}, r"max_batch_size must be an integer in \[1, 1024\]"),
        ({"max_concurrency": 65}, r"max_concurrency must be an integer in \[1, 64\]"),
        ({"timeout": 0}, r"timeout must be a finite number in \[0.001, 3600\]"),
        ({"max_retries": 11}, r"max_retries must be an integer in \[0, 10\]"),
        ({"top_k": 0}, r"top_k must be an integer in \[1, 10000\]"),
        ({"ca_file": "/etc/ca.pem"}, "need an https:// url"),
        ({"url": "https://h/rerank", "client_key": "/k.pem"}, "client_key was given without client_cert"),
        ({"api_key": "plain-text-key"}, "api_key must be a haystack.utils.Secret"),
    ],
)
def test_bad_init_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TEIRanker(**{"url": "http://127.0.0.1:8080/rerank", **kwargs})


def test_missing_tls_files_are_named_at_warm_up():
    ranker = TEIRanker("https://127.0.0.1:8443/rerank", ca_file="/nonexistent/ca.pem")
    with pytest.raises(ValueError, match=r"ca_file '/nonexistent/ca.pem' does not exist"):
        ranker.warm_up()


def test_serialization_keeps_the_key_out_of_the_file():
    ranker = TEIRanker("https://rerank.internal/v1/rerank", api_key=Secret.from_env_var(KEY_ENV), model="bge", top_k=3)
    data = ranker.to_dict()
    assert data["init_parameters"]["api_key"] == {"type": "env_var", "env_vars": [KEY_ENV], "strict": True}
    assert KEY not in str(data)
    assert TEIRanker.from_dict(data).to_dict() == data
    with pytest.raises(ValueError, match="Cannot serialize token-based secret"):
        TEIRanker("http://h/rerank", api_key=Secret.from_token(KEY)).to_dict()


async def test_yaml_pipeline_round_trip_then_ranks_sync_and_async():
    """Hayhooks runs YAML pipelines through Pipeline.run_async, which calls the component's run_async."""
    data = {"ranker": {"query": "cats", "documents": [Document(content="dogs"), Document(content="cats")]}}
    with serve() as base:
        pipeline = Pipeline()
        pipeline.add_component("ranker", TEIRanker(f"{base}/rerank", top_k=1, api_key=None))
        text = pipeline.dumps()
        assert Pipeline.loads(text).dumps() == text
        assert KEY not in text
        out = Pipeline.loads(text).run(data)
        out_async = await Pipeline.loads(text).run_async(data)
        async with httpx.AsyncClient() as client:
            log = (await client.get(f"{base}/_log")).json()
        assert len(log["requests"]) == 2
    assert [d.content for d in out["ranker"]["documents"]] == ["cats"]
    assert [d.content for d in out_async["ranker"]["documents"]] == ["cats"]


def test_factory_builds_a_tei_ranker_from_mxrag_arguments():
    ranker = create_reranker("tei_reranker", url="https://h:8080/rerank", k=2, client_param={"ca_file": "/ca.pem"})
    assert isinstance(ranker, TEIRanker)
    assert (ranker.top_k, ranker.ca_file) == (2, "/ca.pem")
