"""`needle eval` end to end on a small labelled BEIR dataset that the test builds from the sample corpus."""

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from needle_retrieval.cli import main
from tests.support.beir import SAMPLE_QUERIES, write_sample_dataset
from tests.support.paths import REPO

# `needle eval` whose index build stops, inside the writer lock, until the file argv[1] exists (it first touches
# argv[1] + ".building"); argv[2:] are the CLI's arguments.
HELD_EVAL = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import needle_retrieval.index.build
    release = Path(sys.argv[1])
    write = needle_retrieval.index.build.Build.write
    def held_write(self, partial):
        Path(sys.argv[1] + ".building").touch()
        end = time.monotonic() + 300
        while not release.exists() and time.monotonic() < end:
            time.sleep(0.05)
        return write(self, partial)
    needle_retrieval.index.build.Build.write = held_write
    from needle_retrieval.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)

QUERIES = SAMPLE_QUERIES


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BEIR dir: the first passage of every sample module as corpus, six queries with one relevant each."""
    return write_sample_dataset(tmp_path_factory.mktemp("beir") / "pydocs", QUERIES, unjudged="not in the qrels")


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_eval_reports_metrics_json_and_plot(dataset: Path, tmp_path: Path, mode: str, capsys) -> None:
    out, png, run = tmp_path / "r.json", tmp_path / "r.png", tmp_path / "run.trec"
    argv = [
        "eval",
        str(dataset),
        "--mode",
        mode,
        "--index-dir",
        str(tmp_path / "ix"),
        "--json",
        str(out),
        "--plot",
        str(png),
        "--run-file",
        str(run),
    ]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert result["n_queries"] == 6
    assert result["mode"] == mode
    assert result["metrics"]["ndcg@10"] > 0.8, result["metrics"]
    assert result["queries_per_second"] > 0
    assert result["index_build_seconds"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(run.read_text().splitlines()) >= 6 * 10
    assert "nDCG@10" in capsys.readouterr().out


def test_second_dense_eval_reuses_the_index(dataset: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    for name in ("first", "second"):
        assert (
            main(
                [
                    "eval",
                    str(dataset),
                    "--mode",
                    "dense",
                    "--index-dir",
                    str(ix),
                    "--json",
                    str(tmp_path / f"{name}.json"),
                ]
            )
            == 0
        )
    first = json.loads((tmp_path / "first.json").read_text())
    second = json.loads((tmp_path / "second.json").read_text())
    assert first["embedding_cache_hit"] is False
    assert second["embedding_cache_hit"] is True
    assert (first["index_reused"], second["index_reused"]) == (False, True)  # searched as built: same generation
    assert (ix / "CURRENT").read_text().strip() == "gen-000001"
    assert second["metrics"] == first["metrics"]
    assert 0 < second["latency_p50_ms"] <= second["latency_p99_ms"]
    assert second["model_load_seconds"] > 0


def test_compare_puts_runs_side_by_side(dataset: Path, tmp_path: Path, capsys) -> None:
    for mode in ("bm25", "dense"):
        assert (
            main(
                [
                    "eval",
                    str(dataset),
                    "--mode",
                    mode,
                    "--index-dir",
                    str(tmp_path / "ix"),
                    "--name",
                    f"run-{mode}",
                    "--json",
                    str(tmp_path / f"{mode}.json"),
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert (
        main(
            [
                "eval",
                "--compare",
                str(tmp_path / "bm25.json"),
                str(tmp_path / "dense.json"),
                "--plot",
                str(tmp_path / "cmp.png"),
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert "run-bm25" in table
    assert "run-dense" in table
    assert (tmp_path / "cmp.png").stat().st_size > 10_000


def test_eval_of_a_yaml_pipeline(dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ix = tmp_path / "ix"
    assert main(["index", str(dataset / "corpus.jsonl"), "--out", str(ix), "--bm25", "--no-dense"]) == 0
    # an index's own pipelines name its parts relative to the index directory: run them from there
    pipeline = ix / (ix / "CURRENT").read_text().strip() / "bm25_search.yaml"
    monkeypatch.chdir(ix)
    assert main(["eval", str(dataset), "--pipeline", str(pipeline), "--json", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text())["metrics"]["ndcg@10"] > 0.8


def test_pipeline_without_query_input_is_one_line_error(dataset: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("components: {}\nconnections: []\ninputs:\n  text: a.b\noutputs:\n  docs: a.documents\n")
    assert main(["eval", str(dataset), "--pipeline", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "must declare a `query` input and a `documents` output" in err


def test_missing_qrels_is_one_line_error(tmp_path: Path, capsys) -> None:
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q", "text": "x"}\n')
    assert main(["eval", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "test.tsv" in err


def wait_for(done: Callable[[], bool], process: subprocess.Popen, log: Path, what: str, timeout: float = 240) -> None:
    """Poll DONE until true; fail naming WHAT (with PROCESS's log) if it exits first or TIMEOUT passes."""
    end = time.monotonic() + timeout
    while not done():
        if process.poll() is not None:
            pytest.fail(f"exited with {process.returncode} before {what}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > end:
            process.kill()
            pytest.fail(f"no {what} within {timeout:.0f}s:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)


def test_a_second_eval_waits_for_the_first_one_building_the_index_and_reuses_it(dataset: Path, tmp_path: Path) -> None:
    """Two `needle eval` processes on one data set: the second names the first's pid once, waits for its build to
    finish instead of failing "locked by another writer", then searches the generation the first built."""
    ix, release = tmp_path / "ix", tmp_path / "release"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def argv(name: str) -> list[str]:
        return [
            "eval",
            str(dataset),
            "--mode",
            "bm25",
            "--index-dir",
            str(ix),
            "--json",
            str(tmp_path / f"{name}.json"),
        ]

    logs = {name: (tmp_path / f"{name}.out", tmp_path / f"{name}.err") for name in ("first", "second")}
    with logs["first"][0].open("w") as out, logs["first"][1].open("w") as err:
        first = subprocess.Popen(
            [sys.executable, "-c", HELD_EVAL, str(release), *argv("first")], cwd=REPO, env=env, stdout=out, stderr=err
        )
    try:
        wait_for(Path(f"{release}.building").exists, first, logs["first"][1], "the first build")
        with logs["second"][0].open("w") as out, logs["second"][1].open("w") as err:
            second = subprocess.Popen(
                [sys.executable, "-m", "needle_retrieval.cli", *argv("second")],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=err,
            )
        try:
            waiting = f"needle eval: waiting for pid {first.pid} on "
            wait_for(lambda: waiting in logs["second"][1].read_text(), second, logs["second"][1], "waiting line")
            release.touch()
            assert first.wait(timeout=240) == 0, logs["first"][1].read_text()[-3000:]
            assert second.wait(timeout=240) == 0, logs["second"][1].read_text()[-3000:]
        finally:
            second.kill()
    finally:
        release.touch()
        first.kill()
    said = [line for line in logs["second"][1].read_text().splitlines() if line.startswith("needle")]
    assert len(said) == 1, said
    assert said[0].startswith(waiting), said
    assert said[0].endswith(f"to finish writing {ix}"), said
    results = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in ("first", "second")}
    assert (results["first"]["index_reused"], results["second"]["index_reused"]) == (False, True)
    assert (ix / "CURRENT").read_text().strip() == "gen-000001"  # built once
    assert results["second"]["metrics"] == results["first"]["metrics"]
