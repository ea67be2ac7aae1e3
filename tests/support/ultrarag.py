"""UltraRAG's own client side for the tests that run its CLI and servers against needle.

UltraRAG is not on PyPI under its name and CI reaches no GitHub, so the tests find it through two variables and
skip, saying which is missing, when either is unset: ``ULTRARAG_SRC`` (its source tree: the example pipelines,
``servers/`` and ``data/`` a project copies) and ``ULTRARAG_PYTHON`` (a python with its client and its servers'
dependencies installed; ``benchmarks/ultrarag_env.sh SRC VENV`` makes one). A scratch project is laid out as
UltraRAG's README has a user work: the shipped pipelines, the servers they name, the example data, run from the
project's root (UltraRAG resolves every relative path against the working directory). For needle, the project is
the same but for the retriever server's file, replaced by needle's drop-in (``needle_retrieval.ultrarag.dropin``,
the file the docs give), which becomes ``needle mcp``; NEEDLE points it at this checkout's CLI.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from needle_retrieval.ultrarag.dropin import DROPIN

SRC_ENV = "ULTRARAG_SRC"
PYTHON_ENV = "ULTRARAG_PYTHON"
EXAMPLES = Path("examples") / "experiments"
DATA_FILES = ("corpus_example.jsonl", "sample_nq_10.jsonl")
DEPLOY_FILES = ("deploy_retriever_server.py", "deploy_retriever_config.json")
RETRIEVER_FILE = Path("servers") / "retriever" / "src" / "retriever.py"
CLI_TIMEOUT_S = 600
NEEDLE = Path(sys.executable).parent / "needle"  # this checkout's CLI, installed in the interpreter running the tests


@dataclass(frozen=True)
class UltraRAG:
    """An UltraRAG source tree and the python its client is installed in."""

    src: Path
    python: Path

    @property
    def bin(self) -> Path:
        """The directory of its ``ultrarag`` CLI and ``python``: first on PATH, as in an activated venv, because the
        client launches every server as ``python servers/<name>/src/<name>.py``."""
        return self.python.parent

    def env(self) -> dict[str, str]:
        """The environment of a user who activated UltraRAG's venv: offline hub, needle reachable for the drop-in."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return env | {
            "PATH": f"{self.bin}{os.pathsep}{env.get('PATH', '')}",
            "VIRTUAL_ENV": str(self.bin.parent),
            "HF_HUB_OFFLINE": "1",
            "NEEDLE": str(NEEDLE),
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }

    def cli(self, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """``ultrarag ARGS`` run in PROJECT, its output captured."""
        return subprocess.run(
            [str(self.bin / "ultrarag"), *args],
            cwd=project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )


def locate() -> UltraRAG | str:
    """UltraRAG from ULTRARAG_SRC and ULTRARAG_PYTHON, or the reason it cannot be used."""
    src, python = os.environ.get(SRC_ENV), os.environ.get(PYTHON_ENV)
    if not src or not python:
        return (
            f"set {SRC_ENV} (UltraRAG's source tree) and {PYTHON_ENV} (a python with its client installed, "
            "e.g. from benchmarks/ultrarag_env.sh) to run UltraRAG's own CLI and servers"
        )
    found = UltraRAG(Path(src).resolve(), Path(python).absolute())
    if not (found.src / EXAMPLES / "corpus_index.yaml").is_file():
        return f"{SRC_ENV}={src} has no {EXAMPLES / 'corpus_index.yaml'}: not an UltraRAG source tree"
    if not (found.bin / "ultrarag").is_file():
        return f"{PYTHON_ENV}={python} has no `ultrarag` CLI beside it: install UltraRAG's client in that venv"
    return found


def ultrarag_or_skip() -> UltraRAG:
    """UltraRAG, or skip the calling test with the reason it is missing."""
    found = locate()
    if isinstance(found, str):
        pytest.skip(found)
    return found


def make_project(root: Path, ultrarag: UltraRAG, pipelines: list[str], *, needle: bool) -> Path:
    """A project in ROOT with PIPELINES (stem names of ``examples/experiments``), the servers they name, the example
    data and the deploy script; with ``needle``, the retriever server's file is the drop-in and nothing else differs."""
    root.mkdir(parents=True, exist_ok=True)
    servers: set[str] = set()
    for name in pipelines:
        source = ultrarag.src / EXAMPLES / f"{name}.yaml"
        _copy(source, root / EXAMPLES / source.name)
        servers |= {str(path) for path in (yaml.safe_load(source.read_text()).get("servers") or {}).values()}
    for server in sorted(servers):
        for path in sorted((ultrarag.src / server).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                _copy(path, root / path.relative_to(ultrarag.src))
    for name in DATA_FILES:
        _copy(ultrarag.src / "data" / name, root / "data" / name)
    for name in DEPLOY_FILES:
        _copy(ultrarag.src / "script" / name, root / "script" / name)
    if needle:
        (root / RETRIEVER_FILE).write_text(DROPIN)
    return root


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())


def edit_values(path: Path, values: dict[str, Any]) -> None:
    """Set VALUES (dotted keys, e.g. ``retriever.gpu_ids``) in the YAML or JSON file PATH, as a user edits it.

    Only keys already in the file are set: a generated file that lacks one fails here, naming it."""
    is_json = path.suffix == ".json"
    data = json.loads(path.read_text()) if is_json else yaml.safe_load(path.read_text())
    for dotted, value in values.items():
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node[key] if isinstance(node, dict) and key in node else None
        if not isinstance(node, dict) or last not in node:
            raise KeyError(f"{path}: no key {dotted} to set (keys: {sorted(data)})")
        node[last] = value
    path.write_text(json.dumps(data, indent=2) if is_json else yaml.safe_dump(data, sort_keys=False))


@dataclass
class PipelineRun:
    """What a user sees of ``ultrarag build`` then ``ultrarag run`` of one pipeline."""

    name: str
    build: subprocess.CompletedProcess[str] | None = None
    run: subprocess.CompletedProcess[str] | None = None
    memory: list[dict[str, Any]] | None = None  # output/memory_*.json, the steps' memory as UltraRAG wrote it
    setup: str | None = None  # why the pipeline could not be started (e.g. the deploy server it needs did not start)

    @property
    def failure(self) -> str | None:
        """The setup's failure, or the first step that failed and the end of its output; None when both exited 0."""
        if self.setup:
            return f"{EXAMPLES / self.name}.yaml not run: {self.setup}"
        for step, done in (("build", self.build), ("run", self.run)):
            if done is None or done.returncode != 0:
                tail = "" if done is None else (done.stdout + done.stderr)[-4000:]
                return f"`ultrarag {step} {EXAMPLES / self.name}.yaml` failed:\n{tail}"
        return None

    def last(self, key: str) -> Any:
        """KEY (e.g. ``memory_ret_psg``) from the last step whose memory holds it."""
        for step in reversed(self.memory or []):
            if key in step.get("memory", {}):
                return step["memory"][key]
        raise KeyError(f"no step of {self.name} wrote {key}")


def build_and_run(ultrarag: UltraRAG, project: Path, name: str, values: dict[str, Any]) -> PipelineRun:
    """``ultrarag build``, VALUES set in the parameter file the build wrote, then ``ultrarag run``, in PROJECT."""
    config = str(EXAMPLES / f"{name}.yaml")
    done = PipelineRun(name, build=ultrarag.cli(project, "build", config))
    if done.build is None or done.build.returncode != 0:
        return done
    edit_values(project / EXAMPLES / "parameter" / f"{name}_parameter.yaml", values)
    before = set((project / "output").glob("memory_*.json"))
    done.run = ultrarag.cli(project, "run", config)
    written = sorted(set((project / "output").glob("memory_*.json")) - before)
    if done.run.returncode == 0 and written:
        done.memory = json.loads(written[-1].read_text())
    return done


def wait_for_http(url: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 300) -> str | None:
    """Wait until URL answers any HTTP status; else why not (PROCESS exited, or TIMEOUT_S passed) with its log."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if process.poll() is not None:
            return f"server exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return None
        except urllib.error.HTTPError:
            return None
        except OSError:
            time.sleep(0.5)
    return f"{url} did not answer within {timeout_s:.0f}s:\n{log.read_text(errors='replace')[-3000:]}"


def mcp_calls(ultrarag: UltraRAG, command: list[str], calls: list[tuple[str, dict[str, Any]]], cwd: Path) -> list[Any]:
    """Make CALLS ((tool, arguments) pairs) to the MCP stdio server COMMAND with UltraRAG's client library, under
    UltraRAG's python, in one session; per call ``{"result": ...}`` or ``{"error": message}``."""
    spec = {"command": command, "cwd": str(cwd), "calls": calls}
    done = subprocess.run(
        [str(ultrarag.python), str(Path(__file__).with_name("ultrarag_mcp_calls.py"))],
        input=json.dumps(spec),
        env=ultrarag.env(),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"MCP client failed ({done.returncode}):\n{done.stderr[-4000:]}"
    answers: list[Any] = json.loads(done.stdout)
    return answers
