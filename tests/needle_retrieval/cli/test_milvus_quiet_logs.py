"""pymilvus and gRPC stay quiet: a successful `needle index --store milvus --uri` against a real `milvus-lite server`
prints no traceback, no pymilvus ``[ERROR]`` line and no gRPC GOAWAY.

Where the noise came from: pymilvus keeps one shared connection per address open after ``MilvusClient.close()``,
pinging every 10 s with no call in flight (then once a minute, grpc's throttle), and Milvus Lite's gRPC server
keeps grpc's default policy, which sends a connection that pings while idle away (GOAWAY "too_many_pings") after
its third idle ping: with idle pings allowed, a build idling 40 s was sent away. grpc's C core logs that through
absl; pymilvus then logs its failed health check and reconnect with their tracebacks. So the long test idles for
longer than that (a slow embedding server between the first server call and the writes), with
``GRPC_VERBOSITY=ERROR`` set as a user may set it: a GOAWAY would be printed.
"""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support import milvus as milvus_support
from tests.support.milvus import MilvusServer
from tests.support.paths import DATA, REPO, SAMPLE
from tests.support.serve import needle_command, server_env
from tests.support.servers.openai_compatible import EmbeddingServer, serving

milvus_server = milvus_support.milvus_server
milvus_collection = milvus_support.milvus_collection
NOISE = ("Traceback", "[ERROR]", "[WARNING]", "GOAWAY", "too_many_pings", "Too many pings")
EXAMPLE = DATA / "ultrarag_parameter.yaml"
IDLE_S = 45.0  # longer than an idle pinging pymilvus connection lasts on milvus-lite server (sent away within 40 s)
REQUESTS = 10  # embedding requests, one after another, IDLE_S in all


def needle(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """The real CLI in a fresh process, as a user runs it (from CWD)."""
    return subprocess.run(
        needle_command(*args), check=False, cwd=cwd, env=env or server_env(), capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip


def noise_in(stderr: str) -> list[str]:
    """The lines of ``stderr`` that hold any of NOISE."""
    return [line for line in stderr.splitlines() if any(word in line for word in NOISE)]


@pytest.fixture
def slow_embeddings() -> Iterator[EmbeddingServer]:
    """An OpenAI-protocol embedding server that takes IDLE_S to embed REQUESTS batches."""
    with serving() as server:
        server.state.delay_s = IDLE_S / REQUESTS
        yield server


@pytest.mark.integration
def test_needle_index_and_search_on_milvus_lite_server_print_no_noise(
    milvus_server: MilvusServer, milvus_collection: str, tmp_path: Path
) -> None:
    out = tmp_path / "index"
    command = ["index", str(SAMPLE), "--out", str(out), "--store", "milvus", "--bm25", "--uri", milvus_server.uri]
    built = needle(*command, "--collection", milvus_collection)
    assert built.returncode == 0, built.stderr
    assert noise_in(built.stderr) == []
    for mode in ("dense", "bm25", "rrf"):
        query = ("read and write zip archives", "--mode", mode, "--json", "--allow-server", milvus_server.uri)
        found = needle("search", str(out), *query)
        assert found.returncode == 0, found.stderr
        assert noise_in(found.stderr) == []
        assert any(hit["id"].startswith("zipfile") for hit in json.loads(found.stdout)[0][:3])


@pytest.mark.integration
def test_a_build_that_idles_past_pymilvus_keepalive_prints_no_goaway(
    milvus_server: MilvusServer, milvus_collection: str, slow_embeddings: EmbeddingServer, tmp_path: Path
) -> None:
    config = parameter_file(tmp_path, slow_embeddings.url, milvus_server.uri, milvus_collection)
    built = needle("index", "--config", str(config), env={**server_env(), "GRPC_VERBOSITY": "ERROR"}, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert noise_in(built.stderr) == []
    assert len(slow_embeddings.state.log) == REQUESTS  # the build did wait IDLE_S for its embeddings
    found = needle("search", "--config", str(config), "command-line parsing", "--json", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert len(json.loads(found.stdout)[0]) == 5


def parameter_file(root: Path, embeddings_url: str, milvus_uri: str, collection: str) -> Path:
    """UltraRAG's parameter file: 40 passages embedded by ``embeddings_url`` into ``collection`` on ``milvus_uri``."""
    (root / "data").mkdir()
    (root / "data" / "corpus.jsonl").write_text("".join(SAMPLE.read_text().splitlines(True)[:40]))
    data = yaml.safe_load(EXAMPLE.read_text())
    data.update(corpus_path="data/corpus.jsonl", collection_name=collection, backend="openai", index_backend="milvus")
    data["backend_configs"]["openai"].update(base_url=embeddings_url, api_key=None, concurrency=1)
    data["batch_size"] = 40 // REQUESTS
    data["index_backend_configs"]["milvus"]["uri"] = milvus_uri
    path = root / "parameter.yaml"
    path.write_text(yaml.safe_dump(data))
    return path
