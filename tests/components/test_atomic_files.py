"""Replacing a file crash-safely (``components.atomic_files``): a failed or killed write leaves the old file whole,
and the next write of the same file removes what a killed writer left, never a live writer's file."""

import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from components.atomic_files import atomic_copy, atomic_write, atomic_write_text, temp_pattern, temp_sibling

# Writes half its bytes, says so, and blocks until a line comes on stdin (or it is killed), then finishes the write.
BLOCKED_WRITER = """
import sys
from pathlib import Path
from components.atomic_files import atomic_write

def write(handle):
    handle.write(b"half of ")
    handle.flush()
    print("writing", flush=True)
    sys.stdin.readline()
    handle.write(b"the child's file")

atomic_write(Path(sys.argv[1]), write)
print("done", flush=True)
"""


@contextmanager
def blocked_writer(target: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process in the middle of ``atomic_write(target)``: its temporary file holds half its bytes."""
    argv = [sys.executable, "-c", BLOCKED_WRITER, str(target)]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as writer:
        try:
            assert writer.stdout is not None
            assert writer.stdout.readline().strip() == "writing"
            yield writer
        finally:
            if writer.poll() is None:
                writer.send_signal(signal.SIGKILL)
            writer.wait(timeout=60)


def leftovers(target: Path) -> list[str]:
    """The names beside TARGET that are its temporary siblings."""
    return sorted(p.name for p in target.parent.iterdir() if re.fullmatch(temp_pattern(target.name), p.name))


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    with subprocess.Popen([sys.executable, "-c", ""]) as child:
        child.wait(timeout=60)
    return child.pid


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


def test_a_writer_killed_mid_write_leaves_an_orphan_that_the_next_write_removes(tmp_path: Path) -> None:
    target = tmp_path / "fusion.json"
    target.write_bytes(b"previous")
    with blocked_writer(target) as writer:
        writer.send_signal(signal.SIGKILL)
    assert target.read_bytes() == b"previous"
    assert len(leftovers(target)) == 1
    assert (tmp_path / leftovers(target)[0]).read_bytes() == b"half of "
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["fusion.json"]


def test_a_live_writers_file_survives_another_write_and_both_writes_succeed(tmp_path: Path) -> None:
    target = tmp_path / "run.trec"
    with blocked_writer(target) as writer:
        (live,) = leftovers(target)
        atomic_write_text(target, "the parent's file")
        assert target.read_text() == "the parent's file"
        assert leftovers(target) == [live]
        stdout, _ = writer.communicate("go\n", timeout=60)
        assert (writer.returncode, stdout.strip()) == (0, "done")
    assert target.read_text() == "half of the child's file"
    assert [p.name for p in tmp_path.iterdir()] == ["run.trec"]


def test_only_orphans_of_the_same_target_go_never_this_processs_own_nor_other_names(tmp_path: Path) -> None:
    target = tmp_path / "fusion.json"
    pid, hex_ = dead_pid(), uuid.uuid4().hex
    orphan = f".fusion.json.{pid}.{hex_}.tmp"
    kept = [
        f".fusion.json.{pid}.{hex_}.tmp.bak",  # not the pattern exactly
        f".fusion.json.{pid}.{hex_.upper()}.tmp",
        f".fusion.json.{pid}.{hex_[:31]}.tmp",
        f"fusion.json.{pid}.{hex_}.tmp",
        ".fusion.json.tmp",
        f".other.json.{pid}.{hex_}.tmp",  # another target's orphan: its own next write removes it
        temp_sibling(target).name,  # this process's own write, under way
    ]
    for name in [orphan, *kept]:
        (tmp_path / name).write_text("left")
    unremovable = tmp_path / f".fusion.json.{pid}.{uuid.uuid4().hex}.tmp"
    unremovable.mkdir()  # the pattern, but a directory: unlink fails, and the write must not
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, unremovable.name, *kept])
