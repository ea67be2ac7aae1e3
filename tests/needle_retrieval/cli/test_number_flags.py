"""Number flags of `needle` given more digits than Python reads from text (4,300): one short line naming the flag and
its range. Before, `--top-k` echoed all 4,301 digits back on one line, and `--port` said only "invalid port_number
value"."""

import subprocess
import sys
from pathlib import Path

import pytest

NEEDLE = str(Path(sys.executable).with_name("needle"))
HUGE = "1" * 4301


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["search", "no-such-index", "zip", "--top-k", HUGE], "argument --top-k: must be an integer in [1, 10000]"),
        (["search", "no-such-index", "--queries", "q.tsv", "--batch-size", "-" + HUGE], "argument --batch-size"),
        (["serve", "no-such-index", "--port", HUGE], "argument --port: must be a TCP port in [1, 65535]"),
    ],
    ids=["top-k", "batch-size", "port"],
)
def test_a_number_flag_of_4301_digits_is_one_short_line_naming_flag_and_range(
    tmp_path: Path, argv: list[str], said: str
) -> None:
    done = subprocess.run([NEEDLE, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    error = done.stderr.splitlines()[-1]
    assert said in error
    assert "an integer of 4,301 digits" in error
    assert len(error) < 200
