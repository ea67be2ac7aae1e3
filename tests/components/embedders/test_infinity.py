"""Infinity embedders (the seed's `infinity` backend) against the real `infinity_emb v2` from `.venv-infinity`.

One managed server serves most of the module: the `shared` fixture leases it with the same settings that the
components below are built with, so they share it instead of starting their own (each start takes ~10 s here).
Only the tests about a server's life (close, the parent killed, a failed start, the deadline) start their own.
"""

import json
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.utils import Secret

import components  # noqa: F401 - registers our modules with Haystack's deserialization allowlist
from components.embedders import (
    InfinityBatchTextEmbedder,
    InfinityDocumentEmbedder,
    InfinityServer,
    InfinityServerError,
    InfinitySettings,
    InfinityTextEmbedder,
    load_embeddings,
)
from components.embedders.infinity_server import lease, release
from tests.support.paths import INFINITY

from .test_openai import SENTENCES, cosines, reference  # noqa: F401 - module fixture: ST's vectors

SERVER_OPTIONS = {"device": "cpu", "batch_size": 4, "startup_timeout": 240.0}
needs_infinity = pytest.mark.skipif(not INFINITY.exists(), reason="Infinity is not installed in .venv-infinity")


def alive(pid: int) -> bool:
    """Whether `pid` names a live process (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def gone_within(pid: int, seconds: float) -> bool:
    """Wait up to `seconds` for `pid` to end; whether it did."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not alive(pid)


@pytest.fixture(scope="module")
def shared(minilm_path: str) -> Iterator[InfinityServer]:
    """The module's managed server, leased with the settings that `managed()` components use."""
    if not INFINITY.exists():
        pytest.skip(
            "Infinity is not installed in .venv-infinity (see tests/components/rankers/test_tei.py for the commands)"
        )
    server = lease(InfinitySettings(minilm_path, device="cpu", batch_size=4))
    server.start(timeout=240)
    yield server
    release(server)


def managed(cls: type, minilm_path: str, **overrides: object) -> object:
    """A component of `cls` whose managed server is the module's shared one."""
    return cls(model_name_or_path=minilm_path, **{**SERVER_OPTIONS, **overrides})


# --- parameters, serialization (no server) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "name", "value", "message"),
    [
        (InfinityTextEmbedder, "model_name_or_path", "", "model_name_or_path must be a non-empty string"),
        (InfinityTextEmbedder, "url", "ftp://host", "url must start with http:// or https://"),
        (InfinityTextEmbedder, "pooling_method", "max", "pooling_method must be one of auto, mean, cls"),
        (InfinityBatchTextEmbedder, "batch_size", 0, r"batch_size must be an integer in \[1, 2048\]"),
        (InfinityDocumentEmbedder, "batch_size", 0, r"batch_size must be an integer in \[1, 2048\]"),
        (InfinityBatchTextEmbedder, "device", "gpu", "device must be auto, cpu, mps, tensorrt, xla, cuda"),
        (InfinityDocumentEmbedder, "device", "cuda:x", "device must be auto, cpu"),
        (InfinityTextEmbedder, "bettertransformer", "yes", "bettertransformer must be a bool"),
        (InfinityDocumentEmbedder, "model_warmup", None, "model_warmup must be a bool"),
        (InfinityBatchTextEmbedder, "trust_remote_code", 1, "trust_remote_code must be a bool"),
        (InfinityTextEmbedder, "startup_timeout", 0, r"startup_timeout must be a finite number in \(0, 3600\]"),
        (InfinityDocumentEmbedder, "infinity_venv", "", "infinity_venv must be a non-empty string"),
    ],
)
def test_bad_options_fail_at_init_naming_the_option(cls: type, name: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cls(**{"model_name_or_path": "m", name: value})


def test_a_missing_venv_fails_at_warm_up_naming_infinity_venv(tmp_path: Path) -> None:
    embedder = InfinityTextEmbedder(model_name_or_path="m", infinity_venv=str(tmp_path / "no-venv"))
    with pytest.raises(ValueError, match=r"infinity_venv: no bin/infinity_emb in .*no-venv; create it with"):
        embedder.warm_up()
    assert embedder.server is None


@pytest.mark.parametrize("cls", [InfinityTextEmbedder, InfinityBatchTextEmbedder, InfinityDocumentEmbedder])
def test_to_dict_from_dict_round_trip_keeps_keys_out(cls: type, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFINITY_API_KEY", "inf-secret-3")
    embedder = cls(model_name_or_path="m", pooling_method="cls", device="cuda:0,1", bettertransformer=True)
    data = embedder.to_dict()
    assert "inf-secret-3" not in json.dumps(data)
    params = data["init_parameters"]
    assert params["api_key"] == {"type": "env_var", "env_vars": ["INFINITY_API_KEY"], "strict": False}
    assert (params["pooling_method"], params["device"], params["bettertransformer"]) == ("cls", "cuda:0,1", True)
    assert params["url"] is None
    assert cls.from_dict(data).to_dict() == data


def test_pipeline_yaml_round_trip_keeps_the_server_options() -> None:
    pipeline = Pipeline()
    pipeline.add_component("embedder", InfinityDocumentEmbedder(model_name_or_path="m", model_warmup=True))
    loaded = Pipeline.loads(pipeline.dumps())
    assert loaded.get_component("embedder").to_dict() == pipeline.get_component("embedder").to_dict()


@needs_infinity
def test_the_seed_options_map_to_infinity_flags() -> None:
    settings = InfinitySettings(
        "org/model",
        bettertransformer=True,
        pooling_method="cls",
        trust_remote_code=False,
        batch_size=7,
        device="cuda:0,1",
    )
    command = " ".join(settings.command(7997))
    for flags in (
        "v2 --model-id org/model",
        "--host 127.0.0.1 --port 7997 --url-prefix /v1",
        "--batch-size 7 --device cuda --device-id 0,1 --pooling-method cls",
        "--bettertransformer --no-model-warmup --no-trust-remote-code",
    ):
        assert flags in command


# --- the shared managed server -------------------------------------------------------------------------------------


@pytest.mark.integration
def test_managed_batch_embeddings_match_sentence_transformers(
    shared: InfinityServer,
    minilm_path: str,
    reference: np.ndarray,  # noqa: F811
) -> None:
    embedder = managed(InfinityBatchTextEmbedder, minilm_path, concurrency=3)
    got = np.array(embedder.run(texts=SENTENCES)["embeddings"])
    assert embedder.server is shared  # same settings: the running server is shared, not started again
    assert cosines(got, reference).min() >= 1 - 1e-4
    embedder.close()
    assert shared.running


@pytest.mark.integration
def test_managed_text_and_document_embeddings_match_and_the_file_names_infinity(
    shared: InfinityServer,
    minilm_path: str,
    reference: np.ndarray,  # noqa: F811
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "minilm.npy")
    documents = [Document(id=f"s{i}", content=text) for i, text in enumerate(SENTENCES)]
    embedder = managed(InfinityDocumentEmbedder, minilm_path, embedding_path=path, progress_bar=False)
    out = embedder.run(documents=documents)["documents"]
    assert cosines([doc.embedding for doc in out], reference).min() >= 1 - 1e-4
    fingerprint = embedder.fingerprint(documents, [doc.content for doc in documents])
    assert fingerprint["backend"] == "infinity"
    assert cosines(load_embeddings(path, fingerprint), reference).min() >= 1 - 1e-4
    single = managed(InfinityTextEmbedder, minilm_path)
    assert cosines([single.run(text=SENTENCES[3])["embedding"]], reference[3:4])[0] >= 1 - 1e-4
    assert single.server is embedder.server is shared
    embedder.close()
    single.close()


@pytest.mark.integration
async def test_managed_run_async_matches_sentence_transformers(
    shared: InfinityServer,
    minilm_path: str,
    reference: np.ndarray,  # noqa: F811
) -> None:
    embedder = managed(InfinityBatchTextEmbedder, minilm_path, batch_size=4, concurrency=4)
    got = (await embedder.run_async(texts=SENTENCES))["embeddings"]
    assert cosines(got, reference).min() >= 1 - 1e-4
    await embedder.close_async()
    assert embedder.server is None
    assert shared.running


@pytest.mark.integration
def test_an_already_running_server_at_url_is_used_and_left_running(
    shared: InfinityServer,
    reference: np.ndarray,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEEDLE_TEST_INFINITY_KEY", shared.api_key)
    key = Secret.from_env_var("NEEDLE_TEST_INFINITY_KEY")
    embedder = InfinityBatchTextEmbedder(model_name_or_path="any-name", url=shared.base_url, api_key=key)
    pipeline = Pipeline()
    pipeline.add_component("embedder", embedder)
    got = pipeline.run({"embedder": {"texts": SENTENCES}})["embedder"]["embeddings"]
    assert embedder.server is None
    assert cosines(got, reference).min() >= 1 - 1e-4
    embedder.close()
    assert shared.running


# --- a server's life -----------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_close_stops_the_server_once_its_last_holder_closes(
    minilm_path: str,
    reference: np.ndarray,  # noqa: F811
) -> None:
    if not INFINITY.exists():
        pytest.skip("Infinity is not installed in .venv-infinity")
    options = {**SERVER_OPTIONS, "pooling_method": "mean", "model_warmup": True, "batch_size": 8}
    text = InfinityTextEmbedder(model_name_or_path=minilm_path, **options)
    batch = InfinityBatchTextEmbedder(model_name_or_path=minilm_path, **options)
    text.warm_up()
    batch.warm_up()
    assert text.server is batch.server is not None
    pid = text.server.pid
    command = Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    assert "--pooling-method mean --no-vector-disk-cache" in " ".join(command)
    assert {"--model-warmup", "--no-bettertransformer", "--trust-remote-code"} <= set(command)
    assert command[command.index("--batch-size") + 1] == "8"
    assert cosines(batch.run(texts=SENTENCES)["embeddings"], reference).min() >= 1 - 1e-4  # MiniLM pools by mean
    text.close()
    assert alive(pid)  # `batch` still holds it
    batch.close()
    assert not alive(pid)
    batch.close()  # a second close is harmless
    text.close()
    assert batch.server is None


PARENT = """
import sys
from components.embedders import InfinityTextEmbedder
embedder = InfinityTextEmbedder(model_name_or_path=sys.argv[1], device="cpu", startup_timeout=240)
embedder.warm_up()
print(embedder.server.pid, flush=True)
sys.stdin.read()  # wait to be killed
"""


@pytest.mark.integration
def test_the_server_dies_when_its_parent_is_killed(minilm_path: str) -> None:
    if not INFINITY.exists():
        pytest.skip("Infinity is not installed in .venv-infinity")
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT), minilm_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([parent.stdout], [], [], 300)
        line = parent.stdout.readline() if ready else ""
        assert line.strip().isdigit(), f"the parent did not report a server pid (exit code {parent.poll()})"
        pid = int(line)
        assert alive(pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert gone_within(pid, 20), f"server {pid} outlived its parent"


@pytest.mark.integration
def test_a_server_that_fails_to_start_reports_its_log(tmp_path: Path) -> None:
    if not INFINITY.exists():
        pytest.skip("Infinity is not installed in .venv-infinity")
    missing = str(tmp_path / "no-such-model")
    embedder = InfinityTextEmbedder(model_name_or_path=missing, device="cpu", startup_timeout=240)
    with pytest.raises(InfinityServerError, match=r"exited before becoming healthy; last log lines:\n(.|\n)*no-such"):
        embedder.warm_up()
    assert embedder.server is None


@pytest.mark.integration
def test_a_server_not_healthy_by_the_deadline_is_stopped(minilm_path: str) -> None:
    if not INFINITY.exists():
        pytest.skip("Infinity is not installed in .venv-infinity")
    embedder = InfinityTextEmbedder(model_name_or_path=minilm_path, device="cpu", startup_timeout=0.5)
    with pytest.raises(InfinityServerError, match=r"did not become healthy within 0.5 s \(startup_timeout\)") as info:
        embedder.warm_up()
    pid = int(str(info.value).split("(pid ")[1].split(",")[0])
    assert not alive(pid)
    assert embedder.server is None
