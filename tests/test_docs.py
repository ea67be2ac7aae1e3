"""Every code block of README.md and docs/ runs, as a reader following the page would run it.

Each page runs in a scratch directory of its own holding a copy of ``samples/`` (the reader's own corpus), with the
venv's commands on PATH and ``HF_HUB_OFFLINE=1``; its blocks run in page order, so a later block sees what an earlier
one built, and its python blocks share one namespace. By language (``tests.support.docs`` parses the pages):

- ``python``: executed.
- ``console``: each ``$ `` line runs in bash (a ``\\`` line end continues it); a line ending in ``&`` starts a
  server, stopped when the page ends; a ``curl`` line is retried until it succeeds (the server may still be starting).
- ``yaml``: a pipeline (a ``components:`` mapping) must load with ``Pipeline.loads`` after ``import components``;
  any other YAML must parse to a mapping.
- ``json``: must parse. ``bash``: the README's ``make`` lines: ``make run`` runs, the others must be targets.
- ``text``: output or an illustration; never code.

An HTML comment on the line before a fence sets the block up: ``<!-- docs-test: file=NAME -->`` also writes the
block to NAME in the scratch directory (to be used by later blocks), ``expect=TEXT`` requires TEXT in what the block
printed, and ``needs=a,b`` starts local stand-ins for outside services first (``tests.support.docs.SERVICES``).
"""

import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support.docs import SERVICES, Block, blocks_of, pages, services
from tests.support.paths import REPO

BIN = Path(sys.executable).parent
CURL_DEADLINE_S = 180
COMMAND_TIMEOUT_S = 900
pytestmark = pytest.mark.integration


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A reader's directory: a copy of samples/, the venv's commands first on PATH."""
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_every_page_has_only_blocks_the_harness_runs() -> None:
    """A fence with no language, or one the harness cannot run, fails here, naming the page and line."""
    for page in pages():
        for block in blocks_of(page):
            assert block.lang in RUNNERS, (
                f"{block.where}: block language {block.lang!r} is not one of {sorted(RUNNERS)}"
            )
            assert set(block.needs) <= set(SERVICES), f"{block.where}: needs {block.needs}, known: {sorted(SERVICES)}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_page_runs(page: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace: dict[str, object] = {"__name__": "__docs__"}
    background: list[subprocess.Popen[bytes]] = []
    with services(sorted({name for block in blocks_of(page) for name in block.needs}), scratch) as env:
        for name, value in env.items():
            monkeypatch.setenv(name, value)  # undone when the test ends
        try:
            for block in blocks_of(page):
                if block.file:
                    (scratch / block.file).write_text(block.body, encoding="utf-8")
                printed = RUNNERS[block.lang](block, namespace, background)
                assert block.expect is None or block.expect in printed, (
                    f"{block.where}: expected {block.expect!r} in what it printed:\n{printed[-3000:]}"
                )
        finally:
            stop_all(background)


def run_python(block: Block, namespace: dict[str, object], _: list[subprocess.Popen[bytes]]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.body, block.where, "exec"), namespace)
    return out.getvalue()


def run_console(block: Block, _: dict[str, object], background: list[subprocess.Popen[bytes]]) -> str:
    printed = []
    for line in block.commands():
        if line.endswith("&"):
            background.append(subprocess.Popen(["bash", "-c", f"exec {line[:-1]}"], stdout=subprocess.DEVNULL))
        elif line.startswith("curl "):
            printed.append(curl_until_answered(line, block))
        else:
            printed.append(run_command(line, block))
    return "\n".join(printed)


def run_command(line: str, block: Block) -> str:
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{block.where}: `{line}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def curl_until_answered(line: str, block: Block) -> str:
    """Run a curl line until the server answers it with a 2xx (`--fail-with-body`), or fail after the deadline."""
    argv = ["curl", "--silent", "--show-error", "--fail-with-body", *shlex.split(line)[1:]]
    end = time.monotonic() + CURL_DEADLINE_S
    while True:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
        if done.returncode == 0:
            return done.stdout
        if time.monotonic() > end:
            pytest.fail(f"{block.where}: `{line}` never succeeded: {done.stdout[-2000:]} {done.stderr[-2000:]}")
        time.sleep(1)


def run_yaml(block: Block, _: dict[str, object], __: list[subprocess.Popen[bytes]]) -> str:
    data = yaml.safe_load(block.body)
    assert isinstance(data, dict), f"{block.where}: a YAML block must hold a mapping"
    if "components" in data:
        from haystack import Pipeline

        import components  # noqa: F401  (allowlists our types, as a reader's own code does)

        Pipeline.loads(block.body)
    return ""


def run_json(block: Block, _: dict[str, object], __: list[subprocess.Popen[bytes]]) -> str:
    json.loads(block.body)
    return ""


def run_make(block: Block, _: dict[str, object], __: list[subprocess.Popen[bytes]]) -> str:
    """`make run` runs in the repository (what a reader types first); other targets must exist (CI runs them)."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    printed = []
    for line in block.commands(prompt=""):
        target = line.split("#", 1)[0].removeprefix("make ").strip()
        assert line.startswith("make "), f"{block.where}: {line!r} is not a make line"
        assert f"\n{target}:" in makefile, f"{block.where}: {line!r} is no make target"
        if target == "run":
            argv = ["make", "-C", str(REPO), "run", f"PY={sys.executable}"]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
            assert done.returncode == 0, (
                f"{block.where}: make run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
            printed.append(done.stdout)
    return "\n".join(printed)


def skip_text(block: Block, _: dict[str, object], __: list[subprocess.Popen[bytes]]) -> str:
    return ""


RUNNERS = {
    "python": run_python,
    "console": run_console,
    "yaml": run_yaml,
    "json": run_json,
    "bash": run_make,
    "text": skip_text,
}


def stop_all(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
