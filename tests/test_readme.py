"""Every example in README.md runs: python blocks are executed, console blocks run line by line.

They run in a scratch directory that links `samples/` and `pipelines/`, as a user's checkout would have them.
The `text` block of `needle eval` on SciFact is run by tests/needle_retrieval/eval/test_scifact.py.
"""

import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.integration


def blocks(lang: str) -> list[str]:
    """The bodies of the README's fenced code blocks of one language."""
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch checkout: samples/ and pipelines/ linked, the venv's commands on PATH."""
    for name in ("samples", "pipelines"):
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_readme_has_the_examples_this_test_runs() -> None:
    assert len(blocks("python")) == 4
    assert len(blocks("console")) == 3
    assert "make run" in blocks("bash")[0]
    assert "make test" in blocks("bash")[0]


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_python_example_runs_twice(workdir: Path, index: int) -> None:
    """Each python block runs, and runs again in the same directory (a user re-running an example): the second
    run rebuilds or overwrites what the first wrote and answers the same."""
    code = compile(blocks("python")[index], f"README.md python block {index + 1}", "exec")
    for _ in range(2):
        exec(code, {"__name__": "__readme__"})


def run_line(line: str, background: list[subprocess.Popen]) -> str:
    """Run one `$ ` line of a console block; a trailing `&` starts it in the background."""
    if line.endswith("&"):
        background.append(subprocess.Popen(shlex.split(line[:-1]), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        return ""
    if line.startswith("curl"):
        wait_for_server(line)
    proc = subprocess.run(shlex.split(line), capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"`{line}` failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def wait_for_server(curl_line: str, deadline_s: float = 120) -> None:
    """Wait until the Hayhooks server that a curl line talks to has deployed the pipeline it calls."""
    url = re.search(r"(http://127\.0\.0\.1:\d+)/(\w+)/run", curl_line)
    base, name = url.group(1), url.group(2)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"{base}/status", timeout=2) as resp:
                if name in resp.read().decode():
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"no server deployed {name} at {base}")


@pytest.mark.parametrize("index", [0, 1, 2])
def test_console_example_runs(workdir: Path, index: int) -> None:
    lines = [ln[2:].strip() for ln in blocks("console")[index].splitlines() if ln.startswith("$ ")]
    background: list[subprocess.Popen] = []
    try:
        outputs = [run_line(line, background) for line in lines]
    finally:
        for proc in background:
            proc.terminate()
            proc.wait(timeout=30)
    assert all(
        out.strip() for line, out in zip(lines, outputs, strict=True) if not line.endswith("&") and "index" not in line
    )
    if index == 1:
        assert "zipfile" in outputs[-1]
    if index == 2:
        assert "argparse" in outputs[-1] or "getopt" in outputs[-1] or "optparse" in outputs[-1]
