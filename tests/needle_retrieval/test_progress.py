"""Progress of long steps: `needle index` through a pipe says how far the encode is while it runs, at any size.

The CLI tests run `needle index` in a process of its own and read its stderr line by line as it comes; the
dense part uses a tiny BERT (hidden size 32, MiniLM's tokenizer) so that 300 passages encode in about a second.
"""

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from haystack import Document
from haystack.utils import Secret

from components.embedders.openai_document_embedder import OpenAIDocumentEmbedder
from components.embedders.sentence_transformers_document_embedder import SentenceTransformersDocumentEmbedder
from needle_retrieval import progress
from needle_retrieval.progress import INTERVAL_VARIABLE, Progress, track
from tests.support.servers.openai_compatible import serving
from tests.support.words import write_words_corpus

NEEDLE = str(Path(sys.executable).with_name("needle"))
LINES = 300
ENCODING = re.compile(r"needle: indexing \(dense\): encoding ([\d,]+)/300 docs \((\d+)%, ([\d.,]+) docs/s, (.+)\)")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 UltraRAG lines of random words."""
    return write_words_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl", LINES)


def index_through_a_pipe(corpus: Path, out: Path, model: str) -> tuple[list[str], str]:
    """Run `needle index` with stderr on a pipe, reading it line by line while the process runs."""
    env = {**os.environ, INTERVAL_VARIABLE: "0", "HF_HUB_OFFLINE": "1"}
    argv = [NEEDLE, "index", str(corpus), "--out", str(out), "--model", model]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stderr is not None
        assert proc.stdout is not None
        lines = [line.rstrip("\n") for line in iter(proc.stderr.readline, "")]
        stdout = proc.stdout.read()
    assert proc.returncode == 0, "\n".join(lines)
    return lines, stdout


def test_index_through_a_pipe_reports_the_encode_batch_by_batch(corpus: Path, tiny_model: str, tmp_path: Path) -> None:
    lines, stdout = index_through_a_pipe(corpus, tmp_path / "ix", tiny_model)
    progress = [match for line in lines if (match := ENCODING.fullmatch(line))]
    assert progress, "\n".join(lines)
    *during, done = progress
    counts = [int(match[1].replace(",", "")) for match in during]
    assert counts[0] < LINES, lines  # a line while the encode was still going, not one bar filled at the end
    assert during[0][4].startswith("ETA ")
    assert counts == sorted(set(counts)), counts  # one line per batch, counting up
    assert len(counts) >= 3, counts  # per encode batch (32 texts), not per 10,000-document chunk
    assert (done[1], done[2]) == ("300", "100")
    assert done[4].startswith("done in ")
    assert "indexed 300 documents (dense)" in stdout
    assert not any("reus" in line for line in lines)


def test_a_rebuild_says_it_reuses_the_embeddings(corpus: Path, tiny_model: str, tmp_path: Path) -> None:
    index_through_a_pipe(corpus, tmp_path / "ix", tiny_model)
    lines, _ = index_through_a_pipe(corpus, tmp_path / "ix", tiny_model)
    assert f"needle: reused 300 embeddings from {tmp_path / 'ix' / 'gen-000001' / 'embeddings.npy'}" in lines
    assert not any(ENCODING.fullmatch(line) for line in lines), lines
    assert any(line.startswith("needle: indexing (dense): reading embeddings 300/300 docs") for line in lines)


def test_the_embedder_reports_every_encode_batch(minilm_path: str) -> None:
    documents = [Document(id=f"d{i}", content=f"passage number {i} " * (i % 5 + 1)) for i in range(20)]
    for chunk_size, expected in ((4096, [8, 8, 4]), (5, [5, 5, 5, 5])):  # batches, cut at encode chunk ends
        reported: list[int] = []
        embedder = SentenceTransformersDocumentEmbedder(
            model=minilm_path, batch_size=8, encode_chunk_size=chunk_size, progress_bar=False
        )
        embedder.progress_callback = reported.append
        embedder.warm_up()
        assert len(embedder.run(documents=documents)["documents"]) == 20
        assert reported == expected


def test_the_openai_embedder_reports_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEEDLE_TEST_OPENAI_KEY", "sk-local")
    documents = [Document(id=f"d{i}", content=f"passage {i}") for i in range(10)]
    reported: list[int] = []
    with serving(api_key="sk-local") as server:
        key = Secret.from_env_var("NEEDLE_TEST_OPENAI_KEY")
        embedder = OpenAIDocumentEmbedder(base_url=server.url, api_key=key, batch_size=4, progress_bar=False)
        embedder.progress_callback = reported.append
        assert len(embedder.run(documents=documents)["documents"]) == 10
    assert sorted(reported) == [2, 4, 4]  # one count per request of at most 4 texts, as each answer comes


def plain(monkeypatch: pytest.MonkeyPatch, interval: str) -> io.StringIO:
    """A log-like stderr (not a terminal) and the interval between lines."""
    monkeypatch.setenv(INTERVAL_VARIABLE, interval)
    monkeypatch.setattr(progress, "QUIET_START", 0.0)  # lines from the first update on, however quick the step
    return io.StringIO()


def test_a_step_over_within_the_quiet_start_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INTERVAL_VARIABLE, "3600")
    log = io.StringIO()
    with Progress(total=50, desc="latency (bm25)", unit="q", file=log) as bar:
        for _ in range(50):
            bar.update()
    assert log.getvalue() == ""  # a 6-query eval pass does not add lines around the answer


def test_plain_lines_say_count_rate_and_eta_and_end_with_a_done_line(monkeypatch: pytest.MonkeyPatch) -> None:
    log = plain(monkeypatch, "3600")
    with Progress(total=10_000, desc="Indexing (BM25)", unit="docs", file=log) as bar:
        time.sleep(0.2)  # the step's work: the rate counts it, at most 1,200 docs in 0.2 s
        bar.update(1_200)
        bar.advance_to(10_000)
    first, last = log.getvalue().splitlines()
    match = re.fullmatch(r"needle: indexing \(BM25\): 1,200/10,000 docs \(12%, ([\d,]+) docs/s, ETA \S+\)", first)
    assert match, first
    assert int(match[1].replace(",", "")) <= 6_000
    assert re.fullmatch(r"needle: indexing \(BM25\): 10,000/10,000 docs \(100%, [\d,.]+ docs/s, done in \S+s\)", last)


def test_plain_lines_come_at_most_once_an_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    log = plain(monkeypatch, "3600")
    with Progress(total=50, desc="searching (bm25)", unit="q", file=log) as bar:
        for _ in range(50):
            bar.update()
    counts = [re.sub(r" \(\d+%.*", "", line) for line in log.getvalue().splitlines()]
    assert counts == ["needle: searching (bm25): 1/50 q", "needle: searching (bm25): 50/50 q"]  # first and last


def failing_step(log: io.StringIO, done: int) -> None:
    """A step that counts DONE documents of 5, then fails."""
    with Progress(total=5, desc="encoding", unit="docs", file=log) as bar:
        bar.update(done)
        raise RuntimeError("bad line")


def test_a_failed_step_ends_without_its_last_line(monkeypatch: pytest.MonkeyPatch) -> None:
    log = plain(monkeypatch, "0")
    with pytest.raises(RuntimeError):
        failing_step(log, 2)
    lines = log.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("needle: encoding: 2/5 docs (40%, ")
    nothing = plain(monkeypatch, "0")
    with pytest.raises(RuntimeError):
        failing_step(nothing, 0)
    assert nothing.getvalue() == ""  # an error before any work stands alone


def test_track_counts_the_items_of_an_iterable(monkeypatch: pytest.MonkeyPatch) -> None:
    log = plain(monkeypatch, "3600")
    monkeypatch.setattr(sys, "stderr", log)
    assert [text.upper() for text in track(["a", "b", "c"], desc="latency (dense)", unit="q")] == ["A", "B", "C"]
    assert log.getvalue().splitlines()[-1].startswith("needle: latency (dense): 3/3 q (100%, ")


def test_off_shows_nothing_and_a_bad_interval_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    log = plain(monkeypatch, "off")
    with Progress(total=3, desc="encoding", file=log) as bar:
        bar.update(3)
    assert log.getvalue() == ""
    monkeypatch.setenv(INTERVAL_VARIABLE, "soon")
    with pytest.raises(ValueError, match="NEEDLE_PROGRESS_INTERVAL must be a number of seconds >= 0 or 'off', got"):
        Progress(total=3)


class Terminal(io.StringIO):
    """Captured stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_rate_and_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Terminal()
    monkeypatch.setenv(INTERVAL_VARIABLE, "3600")  # lines only: a bar redraws on its own schedule
    with Progress(total=4, desc="Indexing (dense)", unit="docs", postfix="encoding", file=screen) as bar:
        bar.update(4)
    assert re.search(
        r"Indexing \(dense\): 100%\|[^|]*\| 4/4 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+docs/s, encoding\]", screen.getvalue()
    )
    assert "needle:" not in screen.getvalue()
