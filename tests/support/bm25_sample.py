"""A BM25-only index of the sample corpus and a search of it in a child process: what the tests of hostile index
files (a FIFO, a link to /dev/zero, deep JSON) run, so that a hang is a timeout and a crash an exit status."""

import subprocess
import sys
from pathlib import Path

from needle_retrieval.cli import main
from tests.support.paths import SAMPLE

NEEDLE = str(Path(sys.executable).with_name("needle"))
DEADLINE_S = 60  # a search of the sample takes seconds; a hang runs into this


def build_bm25_sample(folder: Path) -> Path:
    """`needle index samples/python_docs.jsonl --bm25 --no-dense` into FOLDER/index; returns the index."""
    index = folder / "index"
    assert main(["index", str(SAMPLE), "--out", str(index), "--bm25", "--no-dense"]) == 0
    return index


def search_child(index: Path) -> subprocess.CompletedProcess[str]:
    """`needle search INDEX "zip archives" --mode bm25` in a child process, killed after DEADLINE_S."""
    argv = [NEEDLE, "search", str(index), "zip archives", "--mode", "bm25"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=DEADLINE_S, check=False)
