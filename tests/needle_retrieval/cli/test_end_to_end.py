"""The `needle` CLI end to end on the shipped sample corpus: index, search, --json, and one-line errors."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from needle_retrieval.cli import main
from tests.support.integrity import edit_manifest
from tests.support.paths import SAMPLE


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus indexed once (dense + BM25) for every test in this module."""
    out = tmp_path_factory.mktemp("cli") / "index"
    assert main(["index", str(SAMPLE), "--out", str(out), "--bm25"]) == 0
    return out


def run_json(capsys: pytest.CaptureFixture, *argv: str) -> list:
    """Run `needle search ... --json` in-process and parse what it printed."""
    capsys.readouterr()
    assert main(["search", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def live_generation(index_dir: Path) -> Path:
    """The generation directory CURRENT names."""
    return index_dir / (index_dir / "CURRENT").read_text().strip()


def test_index_writes_manifest_embeddings_and_pipelines_into_one_generation(sample_index: Path) -> None:
    generation = live_generation(sample_index)
    manifest = json.loads((generation / "manifest.json").read_text())
    n_lines = sum(1 for _ in SAMPLE.open())
    assert manifest["documents"] == n_lines
    assert manifest["corpus"] == SAMPLE.name
    assert manifest["dim"] == 384
    assert manifest["modes"] == ["dense", "bm25"]
    import numpy as np

    emb = np.load(generation / "embeddings.npy")
    assert emb.shape == (n_lines, 384)
    assert emb.dtype == np.float32
    for mode in ("dense", "bm25", "hybrid", "rrf"):
        assert (generation / f"{mode}_search.yaml").is_file()
    assert sorted(p.name for p in sample_index.iterdir()) == ["CURRENT", "LOCK", generation.name]


def test_generation_pipelines_load_with_the_index_directory_as_working_directory(
    sample_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haystack import Pipeline

    text = (live_generation(sample_index) / "bm25_search.yaml").read_text()
    assert str(sample_index) not in text
    assert str(sample_index.resolve()) not in text
    monkeypatch.chdir(sample_index)
    docs = Pipeline.loads(text).run({"retriever": {"query": "read and write ZIP files"}})["retriever"]["documents"]
    assert docs[0].id.startswith("zipfile")


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_search_finds_the_module_that_answers(sample_index: Path, capsys: pytest.CaptureFixture, mode: str) -> None:
    hits = run_json(capsys, str(sample_index), "parse command line arguments and options", "--mode", mode)
    assert len(hits) == 1
    assert len(hits[0]) == 5
    assert set(hits[0][0]) == {"id", "score", "content"}
    assert any(h["id"].startswith(("argparse", "getopt", "optparse")) for h in hits[0][:3])
    scores = [h["score"] for h in hits[0]]
    assert scores == sorted(scores, reverse=True)


def test_json_has_one_list_per_query_and_honours_top_k(sample_index: Path, capsys: pytest.CaptureFixture) -> None:
    hits = run_json(capsys, str(sample_index), "read and write ZIP files", "thread", "json encoder", "--top-k", "2")
    assert [len(h) for h in hits] == [2, 2, 2]
    assert hits[0][0]["id"].startswith("zipfile")


def test_default_mode_is_hybrid_when_both_parts_exist(sample_index: Path, capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    assert main(["search", str(sample_index), "regular expressions"]) == 0
    out = capsys.readouterr().out
    assert "[hybrid]" in out
    assert "re-0" in out


def test_missing_corpus_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["index", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "ix")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"needle: error: corpus not found: {tmp_path / 'nope.jsonl'}"


def test_missing_index_dir_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["search", str(tmp_path / "missing"), "q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "index directory not found" in err
    assert "missing" in err


def test_bad_corpus_line_is_reported_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text('{"id": "a", "contents": "fine"}\n{"id": "b", "contents": \n', encoding="utf-8")
    assert main(["index", str(corpus), "--out", str(tmp_path / "ix")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "bad.jsonl" in err
    assert "line 2" in err


def test_index_built_with_another_model_is_refused(sample_index: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["search", str(sample_index), "q", "--model", "BAAI/bge-small-en-v1.5"]) == 2
    err = capsys.readouterr().err
    assert "built with model sentence-transformers/all-MiniLM-L6-v2" in err
    assert "bge-small" in err


def test_index_of_another_dimension_is_refused(
    sample_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(sample_index, copy)
    edit_manifest(live_generation(copy) / "manifest.json", lambda manifest: manifest.update(dim=768))
    assert main(["search", str(copy), "q", "--mode", "dense"]) == 2
    assert "768-dimensional" in capsys.readouterr().err


def test_bm25_only_index_searches_without_a_model(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "bm25only"
    assert main(["index", str(SAMPLE), "--out", str(out), "--bm25", "--no-dense"]) == 0
    assert json.loads((live_generation(out) / "manifest.json").read_text())["modes"] == ["bm25"]
    hits = run_json(capsys, str(out), "read and write ZIP files")
    assert hits[0][0]["id"].startswith("zipfile")
    assert main(["search", str(out), "q", "--mode", "dense"]) == 2
    assert "no dense part" in capsys.readouterr().err


def test_console_script_prints_no_traceback(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("needle")
    proc = subprocess.run(
        [str(exe), "search", str(tmp_path / "none"), "q"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("needle: error:")


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid", "rrf"])
def test_query_and_top_k_follow_one_rule_in_every_mode(
    sample_index: Path, capsys: pytest.CaptureFixture, mode: str
) -> None:
    for argv, expected in (
        (["", "--top-k", "3"], "QUERY[0] is empty"),
        (["fine", "   "], "QUERY[1] is empty"),
        (["bad \udcff byte"], "QUERY[0] is not valid Unicode"),
    ):
        capsys.readouterr()
        assert main(["search", str(sample_index), *argv, "--mode", mode]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert err.startswith("needle: error:"), err
        assert expected in err, err
    for top_k in ("10001", "0", "two"):
        with pytest.raises(SystemExit) as exit_:
            main(["search", str(sample_index), "q", "--mode", mode, "--top-k", top_k])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "--top-k: must be an integer in [1, 10000]" in err, err


def test_top_k_at_the_limit_is_accepted(sample_index: Path, capsys: pytest.CaptureFixture) -> None:
    hits = run_json(capsys, str(sample_index), "thread", "--mode", "bm25", "--top-k", "10000")
    assert 0 < len(hits[0]) <= 274


def test_invalid_utf8_in_a_query_is_one_line_from_the_console_script(sample_index: Path) -> None:
    exe = Path(sys.executable).with_name("needle")
    proc = subprocess.run(
        [str(exe), "search", str(sample_index), b"caf\xff", "--mode", "bm25"], capture_output=True, check=False
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2
    assert err.count("\n") == 1
    assert "not valid Unicode" in err
    assert "Traceback" not in err


def test_a_reader_that_stops_early_gets_no_error_line(sample_index: Path) -> None:
    exe = Path(sys.executable).with_name("needle")
    search = [str(exe), "search", str(sample_index), *["thread"] * 50, "--mode", "bm25", "--top-k", "100", "--json"]
    with subprocess.Popen(search, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        assert proc.stdout.read(10).startswith(b"[[")  # like `| head -c 10`: read a little, then hang up
        proc.stdout.close()
        err = proc.stderr.read().decode()
    assert proc.returncode == 141  # as a shell reports `cat` or `grep` stopped by a closed pipe
    assert err == ""


def test_needle_debug_shows_the_traceback(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("needle")
    env = {**os.environ, "NEEDLE_DEBUG": "1"}
    proc = subprocess.run(
        [str(exe), "search", str(tmp_path / "none"), "q"], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr
    assert "index directory not found" in proc.stderr
