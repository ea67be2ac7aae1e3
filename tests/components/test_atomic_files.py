"""Replacing a file crash-safely (``components.atomic_files``): a failed or killed write leaves the old file whole."""

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from components.atomic_files import atomic_copy, atomic_write, atomic_write_text, temp_pattern

KILLED_WRITER = """
import sys, time
from pathlib import Path
from components.atomic_files import atomic_write

def write(handle):
    handle.write(b"half of the new")
    handle.flush()
    print("writing", flush=True)
    time.sleep(600)

atomic_write(Path(sys.argv[1]), write)
"""


def test_a_write_replaces_the_file_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "fusion.json"
    target.write_text("old")
    atomic_write_text(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    copy = tmp_path / "copy.json"
    atomic_copy(target, copy)
    assert copy.read_bytes() == target.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.json", "fusion.json"]


def test_interrupted_write_leaves_the_target_untouched_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "emb.npy"
    target.write_bytes(b"previous")

    def write_half_then_fail(handle: object) -> None:
        handle.write(b"partial")  # type: ignore[attr-defined]
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, write_half_then_fail)
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["emb.npy"]


def test_a_writer_killed_mid_write_leaves_the_old_file_and_a_recognisable_leftover(tmp_path: Path) -> None:
    target = tmp_path / "fusion.json"
    target.write_bytes(b"previous")
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "writing"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)
    assert target.read_bytes() == b"previous"
    leftovers = [p.name for p in tmp_path.iterdir() if p != target]
    assert len(leftovers) == 1
    assert re.fullmatch(temp_pattern(target.name), leftovers[0]), leftovers
