"""`--batch-size` and `--threads` on `needle index` and `needle search`: checked with their ranges, applied, and
changing nothing a user gets back (the same hits, reused embeddings)."""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from needle_retrieval.cli import main
from needle_retrieval.cli.options import THREAD_VARIABLES
from needle_retrieval.cli.parser import parser
from needle_retrieval.defaults import QUERY_BATCH
from needle_retrieval.index.manifest import IndexManifest
from tests.support.cli import search_json
from tests.support.paths import DATA, SAMPLE

QUERIES = ["read and write ZIP files", "parse command line arguments", "json encoder", "thread", "regular expressions"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 40 documents of the sample corpus (small enough to encode twice at batch size 7)."""
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    path.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:40]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def default_index(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CORPUS indexed dense + BM25 with the embedder's own batch size."""
    out = tmp_path_factory.mktemp("default") / "index"
    assert main(["index", str(corpus), "--out", str(out), "--bm25"]) == 0
    return out


@pytest.fixture(scope="module")
def batch7_index(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CORPUS indexed dense only, 7 texts per encode batch."""
    out = tmp_path_factory.mktemp("batch7") / "index"
    assert main(["index", str(corpus), "--out", str(out), "--batch-size", "7"]) == 0
    return out


@pytest.fixture
def kept_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A thread count other than torch's current one; torch's and FAISS's counts and the variables are restored."""
    import faiss
    import torch

    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    torch_before, faiss_before = torch.get_num_threads(), faiss.omp_get_max_threads()
    yield 1 if torch_before != 1 else 2
    torch.set_num_threads(torch_before)
    faiss.omp_set_num_threads(faiss_before)


def embeddings(index_dir: Path) -> np.ndarray:
    """The live generation's embedding matrix."""
    matrix: np.ndarray = np.load(index_dir / (index_dir / "CURRENT").read_text().strip() / "embeddings.npy")
    return matrix


def ranked(answers: list[list[dict[str, object]]]) -> list[list[object]]:
    """The hit ids of every query, best first."""
    return [[hit["id"] for hit in hits] for hits in answers]


def test_the_flags_parse_to_numbers_and_default_to_none() -> None:
    index = parser().parse_args(["index", "c.jsonl", "--out", "o", "--batch-size", "7", "--threads", "3"])
    search = parser().parse_args(["search", "DIR", "q"])
    assert (index.batch_size, index.threads) == (7, 3)
    assert (search.batch_size, search.threads) == (None, None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["index", "c", "--out", "o", "--batch-size", "0"], "argument --batch-size: must be an integer in [1, 65536]"),
        (["search", "d", "q", "--batch-size", "10001"], "argument --batch-size: must be an integer in [1, 10000]"),
        (["search", "d", "q", "--threads", "0"], "argument --threads: must be an integer in [1, 1024], got 0"),
        (["index", "c", "--out", "o", "--threads", "two"], "argument --threads: must be an integer in [1, 1024]"),
    ],
)
def test_out_of_range_values_are_refused_with_the_range(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_help_states_what_each_flag_does_and_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        f"queries per pipeline run when there are many (QUERY... or --queries), 1-10000 (default {QUERY_BATCH}" in text
    )
    assert "--threads N CPU threads for query encoding (torch), FAISS search and BM25 scoring, 1-1024" in text


def test_batch_size_without_an_embedder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["index", str(SAMPLE), "--out", str(tmp_path / "i"), "--bm25", "--no-dense", "--batch-size", "7"]
    assert main(argv) == 2
    assert "--batch-size sets the document embedder's batch: --no-dense embeds nothing" in capsys.readouterr().err
    assert not (tmp_path / "i").exists()


def test_an_index_encoded_seven_at_a_time_answers_as_the_default(
    default_index: Path, batch7_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert np.allclose(embeddings(batch7_index), embeddings(default_index), rtol=0, atol=1e-5)
    default = search_json(capsys, str(default_index), *QUERIES, "--mode", "dense")
    batch7 = search_json(capsys, str(batch7_index), *QUERIES, "--mode", "dense")
    assert ranked(batch7) == ranked(default)


def test_a_rebuild_with_another_batch_size_and_threads_reuses_the_embeddings(
    corpus: Path, default_index: Path, capsys: pytest.CaptureFixture[str], kept_threads: int
) -> None:
    import faiss
    import torch

    capsys.readouterr()
    before = embeddings(default_index)
    argv = ["index", str(corpus), "--out", str(default_index), "--bm25", "--batch-size", "5"]
    assert main([*argv, "--threads", str(kept_threads)]) == 0
    assert "reused 40 embeddings" in capsys.readouterr().err
    assert np.array_equal(embeddings(default_index), before)
    assert (torch.get_num_threads(), faiss.omp_get_max_threads()) == (kept_threads, kept_threads)
    assert os.environ["OMP_NUM_THREADS"] == str(kept_threads)


def test_positional_queries_in_batches_of_two_answer_as_one_run(
    default_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = search_json(capsys, str(default_index), *QUERIES, "--mode", "hybrid")
    assert search_json(capsys, str(default_index), *QUERIES, "--mode", "hybrid", "--batch-size", "2") == whole
    assert len(whole) == len(QUERIES)


def test_a_search_with_threads_answers_and_sets_torch_and_faiss(
    default_index: Path, capsys: pytest.CaptureFixture[str], kept_threads: int
) -> None:
    import faiss
    import torch

    expected = search_json(capsys, str(default_index), *QUERIES, "--mode", "hybrid")
    got = search_json(capsys, str(default_index), *QUERIES, "--mode", "hybrid", "--threads", str(kept_threads))
    assert ranked(got) == ranked(expected)  # the same hits; the scores may differ in float noise across thread counts
    assert (torch.get_num_threads(), faiss.omp_get_max_threads()) == (kept_threads, kept_threads)
    assert all(os.environ[name] == str(kept_threads) for name in THREAD_VARIABLES)


def test_batch_size_replaces_the_batch_size_of_a_config_file(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the file's paths are relative to the working directory, as UltraRAG's
    (tmp_path / "data").mkdir()
    shutil.copy(corpus, tmp_path / "data" / "corpus_example.jsonl")
    config = shutil.copy(DATA / "ultrarag_parameter.yaml", tmp_path / "parameter.yaml")  # batch_size: 16
    assert main(["index", "--config", str(config), "--batch-size", "8"]) == 0
    embedder = IndexManifest.load(tmp_path / "index" / "index.index").embedder
    assert embedder is not None
    assert embedder["settings"]["batch_size"] == 8
