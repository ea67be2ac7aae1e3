"""Progress of the sha256 digests of a generation: bytes hashed of the total, as writing and opening it hash them.

A generation of a few MiB (one file of several ``CHUNK``s, small ones, an empty one) is written by a real
``Generations`` and opened again with ``verify_all``; the callback records every report it is given.
"""

import hashlib
import os
from pathlib import Path
from typing import Any

from components.stores.crash_safe_generations import MANIFEST, Generations, load_json, verify_all
from components.stores.file_digests import CHECKING, CHUNK, DIGESTING

LAYOUT = Generations(kind="test store", digits=4)
BIG = 3 * CHUNK + 12_345  # several chunks, the last one short


class Recorder:
    """An ``on_progress(stage, done, total)`` that keeps every report, in the order it was given."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, int, int]] = []

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.reports.append((stage, done, total))


def write_files(directory: Path) -> dict[str, Any]:
    """The generation's content: a large file, small ones (one in a sub-directory), an empty one."""
    (directory / "big.bin").write_bytes(os.urandom(BIG))
    (directory / "small.json").write_text('{"a": 1}', encoding="utf-8")
    (directory / "sub").mkdir()
    (directory / "sub" / "rows.bin").write_bytes(os.urandom(CHUNK + 1))
    (directory / "empty").write_bytes(b"")
    return {}


def assert_counts_up_to_the_total(reports: list[tuple[str, int, int]], stage: str, total: int) -> None:
    """REPORTS start at 0 of TOTAL, grow with every report, and end at TOTAL; all of them in STAGE."""
    assert reports[0] == (stage, 0, total)
    assert reports[-1] == (stage, total, total)
    assert {(name, whole) for name, _, whole in reports} == {(stage, total)}
    done = [count for _, count, _ in reports]
    assert done == sorted(set(done)), done  # strictly growing from 0, never past the total


def test_writing_a_generation_reports_its_bytes_digested_chunk_by_chunk(tmp_path: Path) -> None:
    recorder = Recorder()
    generation = LAYOUT.write(tmp_path / "store", write_files, on_progress=recorder)
    manifest = load_json(generation / MANIFEST)
    total = sum(manifest["files"].values())
    assert total == BIG + CHUNK + 1 + len('{"a": 1}')
    assert_counts_up_to_the_total(recorder.reports, DIGESTING, total)
    assert len(recorder.reports) >= 1 + 4 + 2 + 1, recorder.reports  # a report per chunk, not one per file
    assert manifest["sha256"]["big.bin"] == hashlib.sha256((generation / "big.bin").read_bytes()).hexdigest()
    assert manifest["sha256"]["empty"] == hashlib.sha256(b"").hexdigest()


def test_opening_a_generation_reports_every_byte_it_checks(tmp_path: Path) -> None:
    generation = LAYOUT.write(tmp_path / "store", write_files)
    manifest = LAYOUT.read_manifest(generation)
    for name in manifest["files"]:  # a new version of each file to this process, so that it is hashed again
        os.utime(generation / name, ns=(1_000_000_000, 1_000_000_000))
    recorder = Recorder()
    verify_all(generation, manifest, on_progress=recorder)  # on parallel threads
    assert_counts_up_to_the_total(recorder.reports, CHECKING, sum(manifest["files"].values()))
    assert len(recorder.reports) >= 1 + 4 + 2 + 1, recorder.reports  # growing in order, from parallel threads


def test_files_this_process_already_checked_count_as_done_at_once(tmp_path: Path) -> None:
    generation = LAYOUT.write(tmp_path / "store", write_files)  # the writer hashed every file just now
    manifest = LAYOUT.read_manifest(generation)
    recorder = Recorder()
    verify_all(generation, manifest, ["big.bin", "small.json"], on_progress=recorder)
    total = BIG + len('{"a": 1}')
    assert_counts_up_to_the_total(recorder.reports, CHECKING, total)
    assert len(recorder.reports) == 1 + 2, recorder.reports  # one report per file: none of them is read again
