"""One writer per index directory, and readers that never notice a rebuild.

A second `needle index` on a directory being built fails at once (exit 2, one line naming the holder's pid) and
the index afterwards is whole: its manifest, dense and BM25 parts hold the same documents. Searches opened again
and again while rebuilds switch generations always get a full answer from one corpus or the other.
"""

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore
from needle_retrieval.cli import main
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.search.hits import as_hits
from needle_retrieval.search.searcher import Searcher
from tests.support.paths import SAMPLE

NEEDLE = str(Path(sys.executable).with_name("needle"))
QUERIES = ["read and write files", "thread", "compress data"]
pytestmark = pytest.mark.integration


def corpus_slice(directory: Path, name: str, start: int, stop: int) -> Path:
    """Lines [start, stop) of the sample corpus as a corpus file of their own."""
    path = directory / name
    path.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[start:stop]), encoding="utf-8")
    return path


def assert_whole(index: Path, documents: int) -> None:
    """The live generation's manifest, dense store and BM25 store all hold DOCUMENTS documents."""
    manifest = IndexManifest.load(index)
    generation = index / manifest.generation
    assert manifest.documents == documents
    assert FAISSDocumentStore(path=str(generation / "dense")).count_documents() == documents
    assert BM25DocumentStore(path=str(generation / "bm25")).count_documents() == documents


def wait_for_holder(index: Path, pid: int, proc: subprocess.Popen) -> None:
    """Wait until PID has taken the index's writer lock (it records itself in DIR/LOCK)."""
    while proc.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            if json.loads((index / "LOCK").read_text() or "{}").get("pid") == pid:
                return
        time.sleep(0.01)
    pytest.fail(f"needle index exited ({proc.returncode}) before taking the lock")


def test_a_second_writer_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    index = tmp_path / "ix"
    first = subprocess.Popen(
        [NEEDLE, "index", str(corpus_slice(tmp_path, "a.jsonl", 0, 30)), "--out", str(index), "--bm25"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_holder(index, first.pid, first)
        os.kill(first.pid, signal.SIGSTOP)  # hold the first writer inside its build while the second one tries
        second = subprocess.run(
            [NEEDLE, "index", str(SAMPLE), "--out", str(index), "--bm25", "--no-dense"],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert second.returncode == 2, second.stderr
    assert second.stderr.count("\n") == 1, second.stderr
    assert f"is locked by another writer (pid {first.pid} on" in second.stderr
    assert "Traceback" not in second.stderr
    _, err = first.communicate()
    assert first.returncode == 0, err
    assert_whole(index, 30)


def test_two_writers_started_together_leave_one_whole_index(tmp_path: Path) -> None:
    index = tmp_path / "ix"
    corpora = {30: corpus_slice(tmp_path, "a.jsonl", 0, 30), 20: corpus_slice(tmp_path, "b.jsonl", 100, 120)}
    procs = {
        n: subprocess.Popen(
            [NEEDLE, "index", str(c), "--out", str(index), "--bm25"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, c in corpora.items()
    }
    results = {n: (p.wait(), p.communicate()[1]) for n, p in procs.items()}
    assert all(code in (0, 2) for code, _ in results.values())
    assert any(code == 0 for code, _ in results.values())
    for n, (code, err) in results.items():
        if code == 2:  # lost the race: it names the winner and wrote nothing
            other = next(p for m, p in procs.items() if m != n)
            assert f"pid {other.pid}" in err, err
            assert err.count("\n") == 1, err
    winners = [n for n, (code, _) in results.items() if code == 0]
    # both succeed only one after the other; the later one is then the live index
    live = IndexManifest.load(index).documents
    assert live in winners
    assert_whole(index, live)


def test_searches_during_rebuilds_always_get_a_whole_answer(tmp_path: Path) -> None:
    corpora = [corpus_slice(tmp_path, "a.jsonl", 0, 120), corpus_slice(tmp_path, "b.jsonl", 140, 274)]
    index = tmp_path / "ix"
    answers = []
    for corpus in corpora:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["index", str(corpus), "--out", str(index), "--bm25", "--no-dense", "--overwrite"]) == 0
        answers.append([as_hits(hits) for hits in Searcher(index, mode="bm25").search(QUERIES)])
    assert answers[0] != answers[1]
    assert all(answers[0])
    assert all(answers[1])
    codes: list[int] = []

    def rebuild() -> None:
        for corpus in corpora * 2:
            codes.append(
                subprocess.run(
                    [NEEDLE, "index", str(corpus), "--out", str(index), "--bm25", "--no-dense", "--overwrite"],
                    capture_output=True,
                    check=False,
                ).returncode
            )

    writer = threading.Thread(target=rebuild)
    writer.start()
    seen = []
    while writer.is_alive():
        got = [as_hits(hits) for hits in Searcher(index, mode="bm25").search(QUERIES)]
        assert got in answers, "a search during a rebuild got neither corpus's answer"
        seen.append(answers.index(got))
    writer.join()
    assert codes == [0, 0, 0, 0]
    assert seen
    cli = subprocess.run(
        [NEEDLE, "search", str(index), *QUERIES, "--json"], capture_output=True, text=True, check=False
    )
    assert cli.returncode == 0
    assert json.loads(cli.stdout) == answers[1]
