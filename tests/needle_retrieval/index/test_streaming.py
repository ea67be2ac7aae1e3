"""`needle index` streams the corpus in chunks: the index equals a one-shot build, failures leave the old one live.

The one-shot reference runs the index templates once over the whole corpus, as `needle index` did before it
streamed (reader -> embedder -> writer with an autosaving store). Dense parts use a tiny BERT (hidden size 32)
with MiniLM's tokenizer, built here, so a corpus of a few thousand passages encodes in seconds.
"""

import contextlib
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import needle_retrieval.progress
from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore
from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.build import build_index
from needle_retrieval.pipelines import files as pf

NEEDLE = str(Path(sys.executable).with_name("needle"))
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "river",
    "stone",
    "cloud",
    "paper",
    "light",
    "sound",
    "metal",
    "glass",
    "field",
    "storm",
    "code",
    "tree",
]
QUERIES = ["river stone", "paper light cloud", "storm code", "glass metal field"]
N = 1_100  # > 2 encode chunks of 512, and not a multiple of any chunk size used here


def write_corpus(path: Path, n: int, seed: int = 0, bad_line: int | None = None) -> Path:
    """N UltraRAG lines of random words (lengths vary, so encode batches pad differently); one bad line if asked."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for i in range(1, n + 1):
            if i == bad_line:
                f.write('{"id": "broken", "contents": 5}\n')
                continue
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
            f.write(json.dumps({"id": f"d{i}", "title": rng.choice(WORDS), "contents": text}) + "\n")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl", N)


def one_shot(corpus: Path, where: Path, model: str) -> Path:
    """The dense and BM25 parts as one run of each index template over the whole corpus (the unstreamed build)."""
    where.mkdir()
    dense = pf.load_template("dense_index")
    for key, value in (("embedder.model", model), ("embedder.embedding_path", str(where / "embeddings.npy"))):
        pf.set_init_param(dense, key, value)
    pf.set_init_param(dense, "embedder.progress_bar", False)
    pf.set_init_param(dense, "writer.document_store.path", str(where / "dense"))
    pf.build(dense).run({"reader": {"path": str(corpus)}})
    bm25 = pf.load_template("bm25_index")
    pf.set_init_param(bm25, "writer.document_store.path", str(where / "bm25"))
    pf.set_init_param(bm25, "writer.document_store.document_store_path", str(where / "dense"))
    pf.build(bm25).run({"reader": {"path": str(corpus)}})
    return where


def live(index: Path) -> Path:
    """The live generation directory of a needle index."""
    return index / (index / "CURRENT").read_text().strip()


def answers(generation: Path, dense_dir: Path) -> tuple[list, list, list]:
    """Dense hits (for fixed query vectors), BM25 hits and the whole document table of one build."""
    faiss = FAISSDocumentStore(path=str(generation / "dense"))
    queries = np.random.default_rng(1).standard_normal((4, 32)).astype(np.float32)
    dense = [[(d.id, d.score) for d in hits] for hits in faiss.search(queries, top_k=10)]
    bm25_store = BM25DocumentStore(path=str(generation / "bm25"), document_store_path=str(dense_dir))
    bm25 = [[(d.id, d.score) for d in hits] for hits in bm25_store.bm25_retrieval_batch(QUERIES, top_k=10)]
    table = [(d.id, d.content, d.meta) for d in faiss.filter_documents()]
    return dense, bm25, table


@pytest.fixture(scope="module")
def reference(corpus: Path, tiny_model: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple]:
    where = one_shot(corpus, tmp_path_factory.mktemp("one-shot") / "parts", tiny_model)
    return where, answers(where, where / "dense")


@pytest.mark.parametrize("chunk_size", [1, 600, 10**6])
def test_chunked_build_equals_one_shot(
    corpus: Path, tiny_model: str, reference: tuple[Path, tuple], tmp_path: Path, chunk_size: int
) -> None:
    manifest = build_index(corpus, tmp_path / "ix", model=tiny_model, overwrite=False, bm25=True, chunk_size=chunk_size)
    generation, (expected_parts, expected) = live(tmp_path / "ix"), reference
    assert manifest.documents == N
    assert (generation / "embeddings.npy").read_bytes() == (expected_parts / "embeddings.npy").read_bytes()
    assert (generation / "embeddings.npy.json").read_text() == (expected_parts / "embeddings.npy.json").read_text()
    dense, bm25, table = answers(generation, generation / "dense")
    assert dense == expected[0]
    assert bm25 == expected[1]
    assert table == expected[2]
    assert len(table) == N
    assert all(hits for hits in bm25)


def test_bm25_only_streamed_equals_one_shot(corpus: Path, tmp_path: Path) -> None:
    build_index(corpus, tmp_path / "ix", model="unused", overwrite=False, dense=False, bm25=True, chunk_size=97)
    data = pf.load_template("bm25_index")
    pf.set_init_param(data, "writer.document_store.path", str(tmp_path / "one-shot"))
    pf.build(data).run({"reader": {"path": str(corpus)}})
    streamed = BM25DocumentStore(path=str(live(tmp_path / "ix") / "bm25"))
    whole = BM25DocumentStore(path=str(tmp_path / "one-shot"))
    for got, want in zip(
        streamed.bm25_retrieval_batch(QUERIES, top_k=20), whole.bm25_retrieval_batch(QUERIES, top_k=20), strict=True
    ):
        assert [(d.id, d.score, d.content, d.meta) for d in got] == [(d.id, d.score, d.content, d.meta) for d in want]
    assert [d.id for d in streamed.filter_documents()] == [f"d{i}" for i in range(1, N + 1)]
    saved = [live(root) / "documents.jsonl" for root in (live(tmp_path / "ix") / "bm25", tmp_path / "one-shot")]
    assert saved[0].read_bytes() == saved[1].read_bytes()  # the spilled lines, copied, are what a save encodes


def test_bm25_builds_are_byte_identical_whatever_the_hash_seed(corpus: Path, tmp_path: Path) -> None:
    """Two builds of one corpus, in processes with different string hashing, save the same index files: term ids
    follow sorted terms, never a set's iteration order (manifests differ only in their date and generation id)."""
    saved = []
    for seed in ("1", "2"):
        out = tmp_path / f"seed{seed}"
        argv = [NEEDLE, "index", str(corpus), "--out", str(out), "--no-dense", "--bm25", "--chunk-size", "97"]
        subprocess.run(argv, capture_output=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed})
        files = sorted(p for p in live(live(out) / "bm25").iterdir() if p.name != "manifest.json")
        saved.append({p.name: p.read_bytes() for p in files})
    assert "vocab.index.json" in saved[0]
    assert saved[0] == saved[1]


def test_rebuild_of_unchanged_corpus_reuses_embeddings(corpus: Path, tiny_model: str, tmp_path: Path) -> None:
    build_index(corpus, tmp_path / "ix", model=tiny_model, overwrite=False, chunk_size=600)
    first = live(tmp_path / "ix") / "embeddings.npy"
    build_index(corpus, tmp_path / "ix", model=tiny_model, overwrite=False, chunk_size=600)
    second = live(tmp_path / "ix") / "embeddings.npy"
    assert second != first
    assert second.stat().st_ino == first.stat().st_ino


def test_bad_line_in_a_late_chunk_keeps_the_live_index(corpus: Path, tiny_model: str, tmp_path: Path) -> None:
    index = tmp_path / "ix"
    build_index(corpus, index, model=tiny_model, overwrite=False, bm25=True, chunk_size=600)
    before = live(index)
    snapshot = {p.relative_to(index): p.read_bytes() for p in index.rglob("*") if p.is_file() and p.name != "LOCK"}
    broken = write_corpus(tmp_path / "broken.jsonl", N, seed=3, bad_line=1_050)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(
            ["index", str(broken), "--out", str(index), "--bm25", "--model", tiny_model, "--chunk-size", "600"]
        )
    assert status == 2
    assert f"{broken}, line 1050: field 'contents' must be a string, got number" in err.getvalue()
    assert live(index) == before
    assert not list(index.glob("*.partial"))
    after = {p.relative_to(index): p.read_bytes() for p in index.rglob("*") if p.is_file() and p.name != "LOCK"}
    assert after == snapshot


def test_killed_streamed_build_leaves_the_old_index_answering(tiny_model: str, tmp_path: Path) -> None:
    index = tmp_path / "ix"
    old = write_corpus(tmp_path / "old.jsonl", 300, seed=5)
    build_index(old, index, model=tiny_model, overwrite=False, bm25=True, chunk_size=100)
    search = [NEEDLE, "search", str(index), *QUERIES, "--json"]
    expected = subprocess.run(search, capture_output=True, text=True, check=True).stdout
    new = write_corpus(tmp_path / "new.jsonl", 40_000, seed=6)
    argv = [NEEDLE, "index", str(new), "--out", str(index), "--bm25", "--model", tiny_model, "--chunk-size", "512"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(index.glob("gen-*.partial")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the build ended before its .partial generation could be seen"
        time.sleep(1.0)  # well inside the streamed chunks
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert subprocess.run(search, capture_output=True, text=True, check=True).stdout == expected
    small = write_corpus(tmp_path / "small.jsonl", 200, seed=7)
    manifest = build_index(small, index, model=tiny_model, overwrite=True, bm25=True, chunk_size=64)
    assert manifest.documents == 200
    assert not list(index.glob("*.partial"))


@pytest.mark.parametrize("value", ["0", "-3", "ten"])
def test_chunk_size_must_be_a_positive_integer(corpus: Path, tmp_path: Path, value: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_info:
        main(["index", str(corpus), "--out", str(tmp_path / "ix"), "--chunk-size", value])
    assert exit_info.value.code == 2
    assert f"argument --chunk-size: must be an integer >= 1 (documents per chunk), got '{value}'" in err.getvalue()
    assert not (tmp_path / "ix").exists()
    with pytest.raises(NeedleError, match=r"--chunk-size must be an integer >= 1 \(documents per chunk\), got 0"):
        build_index(corpus, tmp_path / "ix", model="m", overwrite=False, chunk_size=0)


class Terminal(io.StringIO):
    """Captured stderr that says it is a terminal, where `needle index` shows its progress bar."""

    def isatty(self) -> bool:
        return True


def test_one_progress_bar_counts_the_whole_corpus(
    corpus: Path, tiny_model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(needle_retrieval.progress, "QUIET_START", 0.0)  # a plain line however quick this small build is
    err = Terminal()
    argv = ["index", str(corpus), "--out", str(tmp_path / "ix"), "--bm25", "--model", tiny_model, "--chunk-size", "300"]
    with contextlib.redirect_stderr(err):
        assert main(argv) == 0
    bars = re.findall(r"Indexing \((\w+)\):\s+\d+%\|[^|]*\|\s*\d+/(\d+) ", err.getvalue())
    assert {(part, int(total)) for part, total in bars} == {("dense", N), ("BM25", N)}
    assert "Batches" not in err.getvalue()  # no bar per chunk
    assert "Embedding" not in err.getvalue()
    assert f"{N}/{N} [" in err.getvalue()
    logged = io.StringIO()  # not a terminal: no bar at all, as in logs
    with contextlib.redirect_stderr(logged):
        assert main([*argv[:3], str(tmp_path / "logged"), *argv[4:]]) == 0
    assert "\r" not in logged.getvalue()  # plain lines, no bar redrawn in place
    assert f"needle: indexing (dense): encoding {N:,}/{N:,} docs (100%" in logged.getvalue()
