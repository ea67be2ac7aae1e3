"""An index chooses no code, server or secret: what it records must match what the user allows (issue 32, item 1).

Each index here is planted as an attacker with write access would plant it: the manifest rewritten and sealed
again, every digest recomputed (``tests.support.integrity``), so the generation is self-consistent and only the
trust rule (``needle_retrieval.index.trust``) stands between it and the machine. The attacks are real: a model
directory whose own code writes a marker file when imported with ``trust_remote_code``, and a local
OpenAI-compatible server that logs the ``Authorization`` header it receives. Each refusal is checked against the
same attack with the user's permission given, which does run the code or send the key: so the tests can fail.
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from needle_retrieval.cli import main
from tests.support.integrity import edit_manifest, live
from tests.support.paths import SAMPLE
from tests.support.payloads import model_with_code
from tests.support.serve import free_port
from tests.support.servers.openai_compatible import serving

pytestmark = pytest.mark.integration
SECRET = "sk-planted-test-secret"


@pytest.fixture(scope="module")
def dense_index(tmp_path_factory: pytest.TempPathFactory, tiny_model: str) -> Path:
    """A dense index of 12 sample lines with the tiny test model, built through the CLI."""
    root = tmp_path_factory.mktemp("untrusted")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:12]), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["index", str(corpus), "--out", str(root / "index"), "--model", tiny_model]) == 0
    return root / "index"


def plant(index: Path, root: Path, embedder: dict[str, Any], model: str | None = None) -> Path:
    """A copy of INDEX whose manifest records EMBEDDER (and MODEL), sealed again as an attacker would."""
    planted = Path(shutil.copytree(index, root / "planted"))

    def change(manifest: dict[str, Any]) -> None:
        manifest["embedder"] = embedder
        manifest["model"] = model or embedder["settings"]["model_name_or_path"]

    edit_manifest(live(planted) / "manifest.json", change)
    return planted


def embedder_record(backend: str, model: str, block: dict[str, Any], key_variable: str | None = None) -> dict:
    """A manifest's `embedder` record, as `needle index --config` writes it."""
    api_key = None if key_variable is None else {"type": "env_var", "env_vars": [key_variable], "strict": False}
    settings = {"model_name_or_path": model, "backend_configs": block, "query_instruction": "", "batch_size": 32}
    return {"backend": backend, "settings": settings | {"gpu_ids": None, "api_key": api_key}}


def needle(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process (a payload imported there cannot touch this one), HF caches in the sandbox."""
    command = [sys.executable, "-m", "needle_retrieval.cli", *args]
    environment = {**os.environ, **(env or {})}
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=300, env=environment)


def test_trust_remote_code_from_an_index_runs_no_code(dense_index: Path, tiny_model: str, tmp_path: Path) -> None:
    marker = tmp_path / "payload-ran"
    model = str(model_with_code(tiny_model, tmp_path, marker))
    block = {"trust_remote_code": True}
    index = plant(dense_index, tmp_path, embedder_record("sentence_transformers", model, block))
    sandbox = {"HF_HOME": str(tmp_path / "hf")}

    refused = needle("search", str(index), "zip files", env=sandbox)

    assert refused.returncode == 2, refused.stderr
    assert not marker.exists()
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "Traceback" not in refused.stderr
    assert f"--trust-remote-code {model}" in lines[0]
    allowed = needle("search", str(index), "zip files", "--trust-remote-code", model, env=sandbox)
    assert marker.exists(), allowed.stderr  # the user's permission does run the model's code: the attack is real


def test_a_server_and_key_variable_from_an_index_receive_nothing(
    dense_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANY_VARIABLE", SECRET)
    with serving() as server:
        block = {"base_url": server.url, "model_name": "text-embedding-3-small"}
        record = embedder_record("openai", "text-embedding-3-small", block, key_variable="ANY_VARIABLE")
        index = plant(dense_index, tmp_path, record)
        refused = run_cli("search", str(index), "zip files")
        assert refused[0] == 2
        assert f"--allow-server {server.url}" in refused[1]
        only_server = run_cli("search", str(index), "zip files", "--allow-server", server.url)
        assert only_server[0] == 2
        assert "--allow-key-env ANY_VARIABLE" in only_server[1]
        assert server.state.log == []
        run_cli("search", str(index), "zip files", "--allow-server", server.url, "--allow-key-env", "ANY_VARIABLE")
        assert server.state.log  # the attack is real: with the user's permission the key is sent
        assert server.state.log[0]["authorization"] == f"Bearer {SECRET}"


def test_the_environment_gives_the_same_permissions_as_the_flags(
    dense_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANY_VARIABLE", SECRET)
    with serving() as server:
        block = {"base_url": server.url + "/", "model_name": "m"}  # a trailing slash names the same server
        index = plant(dense_index, tmp_path, embedder_record("openai", "m", block, key_variable="ANY_VARIABLE"))
        monkeypatch.setenv("NEEDLE_ALLOW_SERVERS", f"http://elsewhere.invalid/v1, {server.url}")
        monkeypatch.setenv("NEEDLE_ALLOW_KEY_ENV", "ANY_VARIABLE")
        run_cli("search", str(index), "zip files")
        assert server.state.log
        assert server.state.log[0]["authorization"] == f"Bearer {SECRET}"


def test_an_index_naming_only_the_default_key_variable_still_needs_its_server_allowed(
    dense_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with serving() as server:
        record = embedder_record("openai", "m", {"base_url": server.url})
        index = plant(dense_index, tmp_path, record)
        code, stderr = run_cli("search", str(index), "zip files")
        assert code == 2
        assert f"would send the queries to {server.url}" in stderr
        assert server.state.log == []


def test_the_openai_service_itself_is_a_server_to_allow(dense_index: Path, tmp_path: Path) -> None:
    index = plant(dense_index, tmp_path, embedder_record("openai", "text-embedding-3-small", {}))
    code, stderr = run_cli("search", str(index), "zip files")
    assert code == 2
    assert "--allow-server https://api.openai.com/v1" in stderr


def test_a_plain_index_needs_no_permission(dense_index: Path) -> None:
    code, stderr = run_cli("search", str(dense_index), "zip files")
    assert code == 0, stderr


def run_cli(*args: str) -> tuple[int, str]:
    """(exit status, stderr) of the CLI run in this process."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


def test_needle_serve_refuses_a_server_from_an_index_before_any_request(dense_index: Path, tmp_path: Path) -> None:
    with serving() as server:
        index = plant(dense_index, tmp_path, embedder_record("openai", "m", {"base_url": server.url}))
        done = needle("serve", str(index), "--port", str(free_port()))
        assert done.returncode == 2, done.stderr[-2000:]
        assert f"--allow-server {server.url}" in done.stderr
        assert server.state.log == []
