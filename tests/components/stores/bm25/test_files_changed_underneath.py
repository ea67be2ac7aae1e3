"""A loaded BM25 store whose files are changed underneath it (same inode: an in-place rewrite, a truncation, or a
hard link `needle tune` made) keeps answering from what it loaded, or refuses in one line; it never dies by a signal.

Each case runs in a child process, so that a crash (SIGSEGV, SIGBUS) shows as a negative return code instead of
taking the test session down.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from haystack import Document

from components.stores.bm25.document_store import BM25DocumentStore
from tests.support.integrity import live
from tests.support.paths import REPO

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
DOCS = [
    Document(id=f"d{i}", content=f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]} common passage number {i}")
    for i in range(3000)
]

# Opens the store as `needle serve` does (BM25DocumentStore, warmed up), searches, damages FILE in place (same
# inode) with MODE, searches again: the first query's hits (kept decoded) and a second query's, whose documents
# must be read from disk. Prints {"before": ..., "after": ..., "other": ...} or "refused: <message>".
CHILD = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    import numpy as np
    from haystack.document_stores.errors import DocumentStoreError
    from components.stores.bm25.document_store import BM25DocumentStore
    from tests.support.integrity import reseal

    store_path, file, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    store = BM25DocumentStore(path=str(store_path))
    store.warm_up()
    ids = lambda query: [d.id for d in store.bm25_retrieval(query, top_k=5)]
    before = ids("alpha bravo")
    inode, size = file.stat().st_ino, file.stat().st_size
    with open(file, "r+b") as handle:
        if mode == "truncate":
            handle.truncate(0)
        else:
            handle.seek(128)  # past the .npy header
            fill = np.full((size - 128) // 4, 2**30, dtype=np.int32).tobytes() if mode == "large" else None
            handle.write(fill if fill is not None else np.random.default_rng(0).bytes(size - 128))
    if mode == "large-resealed":
        reseal(file)
    assert file.stat().st_ino == inode
    try:
        print(json.dumps({"before": before, "after": ids("alpha bravo"), "other": ids("golf hotel")}))
    except DocumentStoreError as error:
        print(f"refused: {error}")
    """
)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A saved store of 3,000 short documents (arrays of several pages each)."""
    path = tmp_path / "bm25"
    BM25DocumentStore(path=str(path)).write_documents(DOCS)
    return path


def hits(query: str) -> list[str]:
    """The top 5 ids for QUERY of a store built from DOCS in memory (the saved one scores the same)."""
    store = BM25DocumentStore()
    store.write_documents(DOCS)
    return [d.id for d in store.bm25_retrieval(query, top_k=5)]


def run_child(store: Path, file: str, mode: str) -> str:
    """The child's output line; fails the test when it died (by a signal: a negative return code) or raised."""
    argv = [sys.executable, "-c", CHILD, str(store), str(live(store) / file), mode]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"the searching process died ({done.returncode}): {done.stderr[-2000:]}"
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("file", "mode"),
    [
        ("indices.csc.index.npy", "large"),  # row numbers far beyond the rows
        ("indptr.csc.index.npy", "random"),  # posting offsets anywhere
        ("data.csc.index.npy", "random"),
        ("indices.csc.index.npy", "large-resealed"),  # digests recomputed: consistent, but hostile
        ("indices.csc.index.npy", "truncate"),
        ("indptr.csc.index.npy", "truncate"),
    ],
)
def test_a_loaded_store_answers_as_loaded_when_an_array_is_rewritten_in_place(
    saved: Path, file: str, mode: str
) -> None:
    """The arrays a search indexes with were read whole and checked at load: later bytes in the file never reach it."""
    answer = json.loads(run_child(saved, file, mode))
    assert answer == {"before": hits("alpha bravo"), "after": hits("alpha bravo"), "other": hits("golf hotel")}


def test_a_documents_file_truncated_under_a_loaded_store_is_one_line_naming_it(saved: Path) -> None:
    """Documents are read as hits need them: a truncated file is a refusal naming it and the line, not SIGBUS."""
    line = run_child(saved, "documents.jsonl", "truncate")
    assert line.startswith(f"refused: {live(saved) / 'documents.jsonl'}: line ")
    assert "\n" not in line


def test_a_documents_file_rewritten_in_place_under_a_loaded_store_is_one_line_naming_it(saved: Path) -> None:
    """Other bytes of the same size where documents were read: a refusal naming the file and line."""
    line = run_child(saved, "documents.jsonl", "random")
    assert line.startswith(f"refused: {live(saved) / 'documents.jsonl'}: line ")
