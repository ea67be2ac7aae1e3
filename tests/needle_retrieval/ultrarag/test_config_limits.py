"""A parameter.yaml that Python's own limits would stop, read by `needle search --config` as a user runs it: nested
5,000 deep (a RecursionError traceback before), an integer of more than 4,300 digits (Python's "Exceeds the limit
(4300 digits)" before, naming neither key nor range) or a date YAML cannot hold are each one line naming the file,
and the key and its range where there is one."""

import subprocess
import sys
from pathlib import Path

import pytest

NEEDLE = str(Path(sys.executable).with_name("needle"))
BM25 = "backend: bm25\nbackend_configs:\n  bm25:\n    save_path: index\n"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("top_k: " + "[" * 5000 + "]" * 5000 + "\n", "cannot read the parameter file {path}: nested too deeply"),
        (
            "".join("  " * i + f"k{i}:\n" for i in range(5000)),
            "cannot read the parameter file {path}: nested too deeply",
        ),
        (
            BM25 + "top_k: " + "1" * 4301 + "\n",
            "{path}: top_k must be an integer in [1, 10000], got an integer of 4,301 digits",
        ),
        (
            BM25 + "top_k: 0x" + "f" * 5000 + "\n",
            "{path}: top_k must be an integer in [1, 10000], got an integer of 6,021 digits",
        ),
        (
            BM25 + "retrieve_thread_num: -" + "9" * 5000 + "\n",
            "{path}: retrieve_thread_num must be an integer in [1, 64]",
        ),
        (BM25 + "batch_size: 2024-13-01\n", "cannot read the parameter file {path}: a value YAML cannot read"),
    ],
    ids=[
        "list-5000-deep",
        "mapping-5000-deep",
        "top-k-4301-digits",
        "top-k-5000-hex-digits",
        "threads-5000-digits",
        "date",
    ],
)
def test_a_parameter_file_past_python_s_limits_is_one_line(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "parameter.yaml"
    path.write_text(text)
    argv = [NEEDLE, "search", "--config", str(path), "zip archives"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert said.format(path=path) in done.stderr
    assert len(done.stderr) < 400
