"""``needle_retrieval.progress.Stages``: a step made of stages (a store's save), one progress step per stage."""

import io
import re

import pytest

from needle_retrieval import progress
from needle_retrieval.progress import INTERVAL_VARIABLE, Stages


def plain(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """A log-like stderr (not a terminal) that gets a line for every report."""
    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
    monkeypatch.setattr(progress, "QUIET_START", 0.0)
    return io.StringIO()


def test_each_stage_is_a_step_of_its_own_ended_as_soon_as_it_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    log = plain(monkeypatch)
    with Stages(desc="Saving (BM25)", unit="docs", file=log) as report:
        for stage in ("counting terms", "writing documents"):
            report(stage, 0, 20)
            report(stage, 10, 20)
            report(stage, 20, 20)
            log.write("-- after the stage\n")
    lines = log.getvalue().splitlines()
    shapes = [re.sub(r" \([^()]*\)$", "", line) for line in lines]
    assert shapes == [
        "needle: saving (BM25): counting terms 10/20 docs",
        "needle: saving (BM25): counting terms 20/20 docs",
        "-- after the stage",  # the done line came when the stage was done, not after what followed
        "needle: saving (BM25): writing documents 10/20 docs",
        "needle: saving (BM25): writing documents 20/20 docs",
        "-- after the stage",
    ]
    assert re.search(r"\(50%, [\d.,]+ docs/s, ETA \S+\)$", lines[0])
    assert re.search(r"\(100%, [\d.,]+ docs/s, done in \S+s\)$", lines[1])


def failing_save(log: io.StringIO) -> None:
    """A save that writes 3 documents of 8, then finds the disk full."""
    with Stages(desc="Saving (dense)", unit="docs", file=log) as report:
        report("writing documents", 0, 8)
        report("writing documents", 3, 8)
        raise OSError("No space left on device")


def test_a_failed_stage_ends_without_its_last_line(monkeypatch: pytest.MonkeyPatch) -> None:
    log = plain(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        failing_save(log)
    assert [re.sub(r" \([^()]*\)$", "", line) for line in log.getvalue().splitlines()] == [
        "needle: saving (dense): writing documents 3/8 docs"
    ]
