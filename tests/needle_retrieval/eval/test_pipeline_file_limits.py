"""`needle eval --pipeline FILE` with a YAML file Python's own limits would stop: nested 5,000 deep (a RecursionError
traceback before) or holding a date YAML cannot hold (Python's "month must be in 1..12" before, naming no file):
one line naming the file, before anything is searched."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.beir import SAMPLE_QUERIES, write_sample_dataset

NEEDLE = str(Path(sys.executable).with_name("needle"))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("components: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("components: {}\nwhen: 2024-13-01\n", "a value YAML cannot read: month must be in 1..12"),
    ],
    ids=["nested-5000-deep", "impossible-date"],
)
def test_a_pipeline_file_past_python_s_limits_is_one_line_naming_it(tmp_path: Path, text: str, said: str) -> None:
    dataset = write_sample_dataset(tmp_path / "pydocs", SAMPLE_QUERIES)
    pipeline = tmp_path / "deep.yaml"
    pipeline.write_text(text)
    argv = [NEEDLE, "eval", str(dataset), "--pipeline", str(pipeline)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"cannot read pipeline {pipeline}: {said}" in done.stderr
