"""`needle serve` deploys an index's YAML search pipelines on a real Hayhooks server, which answers queries."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from needle.cli import main

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "python_docs.jsonl"
pytestmark = pytest.mark.integration


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict) -> dict:
    """POST JSON, return the decoded JSON answer."""
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def wait_for_pipelines(base: str, names: set[str], proc: subprocess.Popen, deadline_s: float = 120) -> None:
    """Poll /status until every pipeline is deployed, failing early if the server died."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stdout.read()
        try:
            with urllib.request.urlopen(f"{base}/status", timeout=2) as resp:
                if names <= set(json.loads(resp.read()).get("pipelines", [])):
                    return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"Hayhooks did not deploy {names} within {deadline_s}s")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """An index of the sample corpus served by `needle serve` on a free port; stopped afterwards."""
    index = tmp_path_factory.mktemp("serve") / "index"
    assert main(["index", str(SAMPLE), "--out", str(index), "--bm25"]) == 0
    port = free_port()
    exe = str(Path(sys.executable).with_name("needle"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HAYSTACK_DESERIALIZATION_ALLOWLIST", None)
    proc = subprocess.Popen(
        [exe, "serve", str(index), "--port", str(port)], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_pipelines(base, {"dense_search", "bm25_search", "hybrid_search", "rrf_search"}, proc)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize(("name", "answering"), [("dense_search", "retriever"), ("bm25_search", "retriever"),
                                                 ("hybrid_search", "mix"), ("rrf_search", "joiner")])
def test_served_pipeline_answers_query(server: str, name: str, answering: str) -> None:
    result = post(f"{server}/{name}/run", {"query": "read and write ZIP files"})["result"]
    docs = result[answering]["documents"]
    assert docs and docs[0]["id"].startswith("zipfile")
