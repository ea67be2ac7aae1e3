"""No program named by an index runs: Infinity's venv comes from the user (config, environment), never a manifest.

The manifest field ``embedder.settings.backend_configs.infinity_venv`` used to name the directory whose
``bin/infinity_emb`` `needle search` and `needle serve` ran, so a payload shipped inside an index ran. Now a
build takes the venv from the user's parameter.yaml (or Python code) without recording it, a search takes it from
``$NEEDLE_INFINITY_VENV`` (default ``.venv-infinity``), and a manifest that names one is refused with one line
before anything starts. Each test plants a payload that would create a marker file; the marker never appears.
"""

import contextlib
import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from components.embedders.infinity_server import InfinitySettings
from needle_retrieval.cli import main
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.embedders import set_document_embedder, set_query_embedder
from needle_retrieval.ultrarag.embedder_spec import EmbedderSpec, embedder_spec
from tests.support.integrity import edit_manifest, live
from tests.support.paths import SAMPLE

NEEDLE = str(Path(sys.executable).with_name("needle"))
pytestmark = pytest.mark.integration


def payload_venv(root: Path, marker: Path) -> Path:
    """A directory shaped like a venv whose bin/infinity_emb creates MARKER (and exits, as a failed server)."""
    program = root / "payload-venv" / "bin" / "infinity_emb"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    program.chmod(0o755)
    return program.parent.parent


def infinity_embedder(venv: Path) -> dict:
    """An index manifest's `embedder` record for the infinity backend, naming VENV as a build once recorded it."""
    block = {"device": "cpu", "infinity_venv": str(venv)}
    settings = {"model_name_or_path": "m", "backend_configs": block, "query_instruction": "", "batch_size": 32}
    return {"backend": "infinity", "settings": settings | {"gpu_ids": None, "api_key": None}}


@pytest.fixture(scope="module")
def dense_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dense index of 12 sample lines, built through the CLI."""
    root = tmp_path_factory.mktemp("no-program")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:12]), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["index", str(corpus), "--out", str(root / "index")]) == 0
    return root / "index"


@pytest.fixture
def planted(dense_index: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the index whose manifest names a payload venv; returns (index, marker the payload would create)."""
    import shutil

    index = Path(shutil.copytree(dense_index, tmp_path / "index"))
    marker = tmp_path / "payload-ran"
    embedder = infinity_embedder(payload_venv(tmp_path, marker))
    edit_manifest(live(index) / "manifest.json", lambda manifest: manifest.update(embedder=embedder))
    return index, marker


def test_needle_search_refuses_a_manifest_naming_a_venv_and_runs_nothing(
    planted: tuple[Path, Path], capsys: pytest.CaptureFixture
) -> None:
    index, marker = planted
    capsys.readouterr()
    assert main(["search", str(index), "read files", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "backend_configs.infinity_venv" in err
    assert "names a program to run" in err
    assert not marker.exists()


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_needle_serve_refuses_a_manifest_naming_a_venv_and_runs_nothing(planted: tuple[Path, Path]) -> None:
    index, marker = planted
    argv = [NEEDLE, "serve", str(index), "--port", str(free_port())]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False)
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"needle serve started instead of refusing the index: {timeout.stderr!r}")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "backend_configs.infinity_venv" in done.stderr
    assert not marker.exists()


def test_a_config_venv_builds_the_index_but_is_never_recorded_nor_put_in_a_search_pipeline(tmp_path: Path) -> None:
    """What a parameter.yaml's backend_configs.infinity.infinity_venv gives: the document embedder of the build
    uses it; the manifest the build writes and the query embedders (the index's YAML files keep them) do not."""
    venv = str(tmp_path / "venv")
    build = embedder_spec("infinity", "m", {"device": "cpu", "infinity_venv": venv}).recorded()
    data = pf.load_template("dense_index")
    set_document_embedder(data, "m", str(tmp_path / "e.npy"), False, build)
    assert data["components"]["embedder"]["init_parameters"]["infinity_venv"] == venv
    manifest = IndexManifest(corpus="c.jsonl", documents=1, modes=["dense"], model="m", dim=4, embedder=build)
    assert venv not in json.dumps(manifest.recorded())
    for template in ("dense_search", "dense_batch_search"):
        data = pf.load_template(template)
        set_query_embedder(data, "m", build, batch="batch" in template)
        assert "infinity_venv" not in data["components"]["embedder"]["init_parameters"]
    assert EmbedderSpec.from_recorded(manifest.recorded()["embedder"]).block == {"device": "cpu"}


def test_a_recorded_spec_naming_a_venv_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"backend_configs\.infinity_venv .* names a program to run"):
        EmbedderSpec.from_recorded(infinity_embedder(tmp_path / "venv"))


def test_a_search_runs_the_venv_of_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default venv is $NEEDLE_INFINITY_VENV when it is set (the user's choice); one given in code is kept."""
    venv = payload_venv(tmp_path, tmp_path / "unused")
    monkeypatch.setenv("NEEDLE_INFINITY_VENV", str(venv))
    assert InfinitySettings("m").executable() == venv / "bin" / "infinity_emb"
    with pytest.raises(ValueError, match=r"infinity_venv: no bin/infinity_emb in .*chosen"):
        InfinitySettings("m", infinity_venv=str(tmp_path / "chosen")).executable()
