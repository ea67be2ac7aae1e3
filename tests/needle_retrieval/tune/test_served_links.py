"""`needle serve` over a tuned index whose BM25 files are rewritten in place underneath it: `needle tune` links the
live generation's files to the previous one's (one file, two names), so a write through either name reaches the
running server's index. The server keeps answering from what it loaded; it never dies (it did, of SIGSEGV)."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.support.beir import SAMPLE_QUERIES, write_sample_dataset
from tests.support.integrity import live
from tests.support.paths import REPO
from tests.support.serve import Server, needle_command, server_env, started


def needle(*args: str) -> None:
    """Run a needle command of this checkout; fail with its output when it fails."""
    argv = needle_command(*args)
    done = subprocess.run(argv, cwd=REPO, env=server_env(), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture
def tuned(tmp_path: Path, tiny_model: str) -> Path:
    """An index of the sample corpus (dense and BM25) after `needle tune --reset`: two generations, linked."""
    dataset, index = write_sample_dataset(tmp_path / "data", SAMPLE_QUERIES), tmp_path / "index"
    needle("index", str(dataset / "corpus.jsonl"), "--out", str(index), "--bm25", "--model", tiny_model)
    needle("tune", str(dataset), "--index-dir", str(index), "--model", tiny_model, "--reset")
    return index


def bm25_ids(server: Server, query: str) -> list[str]:
    """The ids `POST /bm25_search/run` answers for QUERY (top 5)."""
    answer = server.post_json("/bm25_search/run", {"query": query, "top_k": 5})
    assert answer.status == 200, answer.body[:500]
    return [hit["id"] for hit in answer.json()["result"]["retriever"]["documents"]]  # type: ignore[index]


def test_a_served_bm25_index_rewritten_through_tunes_link_keeps_answering(tuned: Path, tmp_path: Path) -> None:
    first = tuned / "gen-000001" / "bm25"
    linked = live(first) / "indices.csc.index.npy"
    served = live(live(tuned) / "bm25") / "indices.csc.index.npy"
    assert linked.stat().st_ino == served.stat().st_ino  # the previous generation's name of the live file
    queries = ["compressed archive files", "regular expression matching", "command line options"]
    with started(tuned, tmp_path / "serve.log") as server:
        before = {query: bm25_ids(server, query) for query in queries}
        size = linked.stat().st_size
        with linked.open("r+b") as handle:  # row numbers far beyond the rows, written through the other name
            handle.seek(128)
            handle.write(np.full((size - 128) // 4, 2**30, dtype=np.int32).tobytes())
        assert {query: bm25_ids(server, query) for query in queries} == before
        assert server.process.poll() is None, server.output()[-3000:]
    assert all(before.values())
