"""Evaluation library and benchmark runner: BEIR loading and its errors, hand-checked metrics, JSON
round trip, tables, plot, and ``benchmarks/run.py`` on fake benchmark modules written to a tmp dir."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import re
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from components.converters import CorpusFormatError, JSONLCorpusReader
from needle_retrieval.eval import (
    DatasetError,
    EvalResult,
    ResultFileError,
    evaluate_run,
    format_markdown_table,
    format_table,
    load_beir,
    load_results,
    plot,
    run_from_rankings,
)
from needle_retrieval.eval.timing import SearchTimings
from needle_retrieval.pipelines.fusion import DEFAULT_FUSION, Fusion, FusionSetting, Mix
from tests.support.paths import REPO

LOG2 = math.log2

QRELS = {  # q4 is graded: trec_eval / BEIR use linear gain, so grade 2 counts twice grade 1
    "q1": {"d1": 1},
    "q2": {"d2": 1, "d3": 1},
    "q3": {"d4": 1},
    "q4": {"d6": 2, "d8": 1},
    "q5": {"d10": 1},
}
RUN = {
    "q1": {"d5": 3.0, "d1": 2.0, "d7": 1.0},
    "q2": {"d2": 0.9, "d9": 0.8, "d3": 0.7},
    "q3": {f"d{n}": 30.0 - n for n in range(11, 21)} | {"d4": 1.0},  # relevant doc at rank 11
    "q4": {"d8": 5.0, "d6": 4.0},
    # q5 retrieved nothing: it must still count, with 0 everywhere
}
EXPECTED_NDCG = [1 / LOG2(3), (1 + 1 / LOG2(4)) / (1 + 1 / LOG2(3)), 0.0, (1 + 2 / LOG2(3)) / (2 + 1 / LOG2(3)), 0.0]
EXPECTED_AP = [1 / 2, (1 / 1 + 2 / 3) / 2, 1 / 11, (1 / 1 + 2 / 2) / 2, 0.0]


def _write_dataset(root: Path) -> Path:
    """A 20-document BEIR dir: 5 judged test queries, one train-only query, one all-zero judged query."""
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w") as corpus:
        for n in range(1, 21):
            corpus.write(json.dumps({"_id": f"d{n}", "title": f"Title {n}", "text": f"text of document {n}"}) + "\n")
    queries = {f"q{n}": f"question {n}" for n in range(1, 8)}
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, docs in QRELS.items() for d, s in docs.items()]
    (root / "qrels" / "test.tsv").write_text("\n".join([*lines, "q6\td3\t0"]) + "\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq7\td1\t1\n")
    return root


@pytest.fixture
def beir_dir(tmp_path: Path) -> Path:
    return _write_dataset(tmp_path / "toy")


def test_load_beir_keeps_only_judged_queries_of_the_split(beir_dir: Path) -> None:
    dataset = load_beir(beir_dir)
    assert dataset.name == "toy"
    assert dataset.split == "test"
    assert dataset.n_docs == 20
    assert list(dataset.queries) == ["q1", "q2", "q3", "q4", "q5"]
    assert dataset.queries["q2"] == "question 2"
    assert dataset.qrels == QRELS
    assert dataset.skipped_queries == ["q6"]
    assert dataset.corpus_path == beir_dir / "corpus.jsonl"
    assert list(load_beir(beir_dir, split="train").queries) == ["q7"]


def test_load_beir_accepts_qrels_without_header(beir_dir: Path) -> None:
    qrels = beir_dir / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().split("\n", 1)[1])
    assert load_beir(beir_dir).qrels == QRELS


def _replace_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


BAD_INPUTS: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "no corpus": (lambda d: (d / "corpus.jsonl").unlink(), ["missing corpus.jsonl", "qrels/<split>.tsv"]),
    "no queries": (lambda d: (d / "queries.jsonl").unlink(), ["missing queries.jsonl", "a BEIR dir needs"]),
    "no split": (lambda d: (d / "qrels" / "test.tsv").unlink(), ["missing qrels/test.tsv", "found: train"]),
    "corpus not json": (
        lambda d: _replace_line(d / "corpus.jsonl", 4, "{oops"),
        ["corpus.jsonl, line 4", "invalid JSON"],
    ),
    "corpus no _id": (
        lambda d: _replace_line(d / "corpus.jsonl", 3, '{"text": "x"}'),
        ["corpus.jsonl, line 3", "missing id field '_id'"],
    ),
    "corpus dup id": (
        lambda d: _replace_line(d / "corpus.jsonl", 5, '{"_id": "d2", "text": "x"}'),
        ["corpus.jsonl, line 5", "duplicate id 'd2'", "line 2"],
    ),
    "corpus surrogate": (
        lambda d: _replace_line(d / "corpus.jsonl", 2, r'{"_id": "d2", "text": "\ud800"}'),
        ["corpus.jsonl, line 2", "field 'text' is not valid Unicode"],
    ),
    "corpus deep": (
        lambda d: _replace_line(d / "corpus.jsonl", 2, '{"_id": "d2", "m": ' + "[" * 10**5 + "]" * 10**5),
        ["corpus.jsonl, line 2", "field 'm' is nested deeper than 100 levels"],
    ),
    "query no text": (
        lambda d: _replace_line(d / "queries.jsonl", 2, '{"_id": "q2"}'),
        ["queries.jsonl, line 2", "'text'"],
    ),
    "query too deep": (
        lambda d: _replace_line(d / "queries.jsonl", 2, "[" * 10**5),
        ["queries.jsonl, line 2", "nested deeper than 100"],
    ),
    "unknown doc": (
        lambda d: _replace_line(d / "qrels" / "test.tsv", 3, "q2\td99\t1"),
        ["test.tsv, line 3", "corpus-id 'd99' is not in corpus.jsonl"],
    ),
    "unknown query": (
        lambda d: _replace_line(d / "qrels" / "test.tsv", 2, "q42\td1\t1"),
        ["test.tsv, line 2", "query-id 'q42' is not in queries.jsonl"],
    ),
    "two fields": (
        lambda d: _replace_line(d / "qrels" / "test.tsv", 4, "q2 d3 1"),
        ["test.tsv, line 4", "3 tab-separated"],
    ),
    "float score": (
        lambda d: _replace_line(d / "qrels" / "test.tsv", 2, "q1\td1\t0.5"),
        ["test.tsv, line 2", "score '0.5' must be an integer >= 0"],
    ),
    "negative score": (lambda d: _replace_line(d / "qrels" / "test.tsv", 2, "q1\td1\t-1"), ["line 2", "score -1"]),
    "dup judgement": (
        lambda d: _replace_line(d / "qrels" / "test.tsv", 3, "q1\td1\t1"),
        ["test.tsv, line 3", "duplicate judgement for query 'q1', doc 'd1'"],
    ),
    "odd header": (
        lambda d: _replace_line(d / "qrels" / "test.tsv", 1, "qid\tdocid\tscore"),
        ["test.tsv, line 1", "header line is only allowed"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_load_beir_bad_input_is_a_one_line_dataset_error(beir_dir: Path, case: str) -> None:
    damage, fragments = BAD_INPUTS[case]
    damage(beir_dir)
    with pytest.raises(DatasetError) as caught:
        load_beir(beir_dir)
    message = str(caught.value)
    assert "\n" not in message
    assert isinstance(caught.value, ValueError)
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize(
    "line",
    [
        "{oops",
        r'{"_id": "d2", "text": "\udfff"}',
        '{"_id": "d2", "text": "x", "m": ' + "{" * 10**5,
        '{"_id": "d2", "text": NaN}',
        '{"_id": "d1", "text": "a second d1"}',
        '{"_id": "d2", "text": 5}',
    ],
)
def test_a_bad_corpus_line_reads_the_same_in_needle_index_and_needle_eval(beir_dir: Path, line: str) -> None:
    """load_beir reads corpus.jsonl through the corpus reader ``needle index`` uses: one line, one message."""
    _replace_line(beir_dir / "corpus.jsonl", 2, line)
    with pytest.raises(CorpusFormatError) as by_index:
        JSONLCorpusReader().run(path=str(beir_dir / "corpus.jsonl"))
    with pytest.raises(DatasetError) as by_eval:
        load_beir(beir_dir)
    assert str(by_eval.value) == str(by_index.value)
    assert str(by_eval.value).startswith(f"{beir_dir / 'corpus.jsonl'}, line 2: ")


def test_load_beir_missing_dir(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"does not exist.*corpus\.jsonl, queries\.jsonl and qrels"):
        load_beir(tmp_path / "nowhere")


def test_load_beir_reads_scifact(scifact_dir: Path) -> None:
    dataset = load_beir(scifact_dir)
    assert (dataset.n_docs, len(dataset.queries)) == (5183, 300)
    assert sum(len(docs) for docs in dataset.qrels.values()) == 339


def test_metrics_match_hand_computation() -> None:
    scores = evaluate_run(RUN, QRELS)
    assert scores.n_queries == 5
    assert scores.metrics["ndcg@10"] == pytest.approx(sum(EXPECTED_NDCG) / 5)
    assert scores.metrics["mrr@10"] == pytest.approx((1 / 2 + 1 + 0 + 1 + 0) / 5)  # q3's hit at rank 11 is cut
    assert scores.metrics["recall@10"] == pytest.approx(3 / 5)
    assert scores.metrics["recall@100"] == pytest.approx(4 / 5)
    assert scores.metrics["map@100"] == pytest.approx(sum(EXPECTED_AP) / 5)
    assert list(scores.per_query_ndcg10) == ["q1", "q2", "q3", "q4", "q5"]
    assert list(scores.per_query_ndcg10.values()) == pytest.approx(EXPECTED_NDCG)
    assert len(scores.recall_curve) == 100
    assert scores.recall_curve[0] == pytest.approx((0 + 0.5 + 0 + 0.5 + 0) / 5)
    assert scores.recall_curve[10] == pytest.approx(4 / 5)


def test_run_from_rankings_keeps_pipeline_order_despite_ties() -> None:
    qrels = {"q1": {"d1": 1}}
    tied = {"q1": {"d1": 0.5, "d2": 0.5}}  # trec_eval breaks the tie by doc id, descending: d2 first
    assert evaluate_run(tied, qrels).metrics["mrr@10"] == pytest.approx(0.5)
    ranked = run_from_rankings({"q1": ["d1", "d2", "d1"]})
    assert ranked == {"q1": {"d1": 3.0, "d2": 2.0}}
    assert evaluate_run(ranked, qrels).metrics["mrr@10"] == pytest.approx(1.0)


def test_evaluate_run_ties_scores_as_pytrec_eval_does_as_32_bit_floats() -> None:
    """0.5 and 0.49999999 are two Python floats but one 32-bit float: trec_eval ties them and puts "b" first."""
    import pytrec_eval

    qrels, run = {"q1": {"a": 1}}, {"q1": {"a": 0.5, "b": 0.49999999, "c": 0.25}}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q1"]["recip_rank"]
    assert trec == 0.5
    assert evaluate_run(run, qrels).metrics["mrr@10"] == trec


@pytest.mark.parametrize(
    ("run", "qrels", "fragment"),
    [
        ({"q9": {"d1": 1.0}}, {"q1": {"d1": 1}}, "query id(s) are not in the qrels, e.g. 'q9'"),
        ({"q1": {"d1": float("nan")}}, {"q1": {"d1": 1}}, "query 'q1', doc 'd1': score must be a number"),
        ({"q1": {7: 1.0}}, {"q1": {"d1": 1}}, "doc id must be a string"),
        ({}, {"q1": {"d1": 0}}, "query 'q1' has no relevant document"),
        ({}, {"q1": {"d1": 0.5}}, "query 'q1', doc 'd1': relevance must be an integer"),
        ({}, {}, "no judged queries"),
    ],
)
def test_evaluate_run_rejects_bad_input(run: dict, qrels: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        evaluate_run(run, qrels)


def _result(name: str, run: dict, **measured) -> EvalResult:
    return EvalResult.from_scores(
        evaluate_run(run, QRELS), name=name, dataset="toy", split="test", mode=name, **measured
    )


def test_json_round_trip_with_stable_keys(tmp_path: Path) -> None:
    result = _result(
        "bm25",
        RUN,
        queries_per_second=812.5,
        index_build_seconds=0.25,
        embedding_cache_hit=False,
        params={"k1": 1.2, "b": 0.75},
        fusion=DEFAULT_FUSION.record(),
    )
    path = tmp_path / "out" / "bm25.json"
    result.save(path)
    assert EvalResult.load(path) == result
    keys = list(json.loads(path.read_text()))
    assert keys == [
        "schema",
        "name",
        "dataset",
        "split",
        "mode",
        "n_queries",
        "metrics",
        "queries_per_second",
        "index_build_seconds",
        "embedding_cache_hit",
        "params",
        "recall_curve",
        "per_query_ndcg10",
        "index_reused",
        "model_load_seconds",
        "warmup_seconds",
        "latency_p50_ms",
        "latency_p99_ms",
        "latency_queries",
        "fusion",
    ]
    assert json.loads(path.read_text())["fusion"] == {
        "source": "default",
        "path": None,
        "mix": {"baseline": 0.4, "amplitude": 0.3, "slope": 1.0, "midpoint": 6.0},
        "rrf": {"k": 61},
    }


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda obj: obj.update(schema="other/9"), "key 'schema' must be 'needle.eval/1'"),
        (lambda obj: obj.pop("metrics"), "missing key 'metrics'"),
        (lambda obj: obj["metrics"].pop("mrr@10"), "key 'metrics' must be an object with numbers for"),
        (lambda obj: obj.update(recall_curve=[0.5] * 7), "key 'recall_curve' must be a list of 100 numbers"),
        (lambda obj: obj.update(embedding_cache_hit="yes"), "key 'embedding_cache_hit' must be true, false or null"),
        (lambda obj: obj.update(latency_p99_ms=-1.0), "key 'latency_p99_ms' must be a number >= 0 or null"),
        (lambda obj: obj.update(index_reused="no"), "key 'index_reused' must be true, false or null"),
        (lambda obj: obj.update(fusion=DEFAULT_FUSION.record() | {"source": "guessed"}), "key 'fusion' must be null"),
        (lambda obj: obj.update(fusion=DEFAULT_FUSION.record() | {"rrf": {"k": "61"}}), "key 'fusion' must be null"),
        (lambda obj: obj.update(fusion={"source": "default"}), "mix (baseline, amplitude, slope, midpoint)"),
    ],
)
def test_from_json_names_file_and_key(tmp_path: Path, edit: Callable[[dict], object], fragment: str) -> None:
    obj = json.loads(_result("bm25", RUN).to_json())
    edit(obj)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(ResultFileError) as caught:
        EvalResult.load(path)
    assert str(caught.value).startswith(str(path))
    assert fragment in str(caught.value)


def test_load_unreadable_results(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="cannot read results file"):
        EvalResult.load(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ResultFileError, match=r"bad\.json: not valid JSON"):
        EvalResult.load(tmp_path / "bad.json")


def _better_run() -> dict:
    """RUN with q1's relevant doc moved to the top: q1 improves, the rest stays."""
    return RUN | {"q1": {"d1": 9.0, "d5": 3.0, "d7": 1.0}}


def test_compare_table_shows_both_runs_side_by_side(tmp_path: Path) -> None:
    _result("bm25", RUN, queries_per_second=1500.0).save(tmp_path / "a.json")
    _result("dense", _better_run(), embedding_cache_hit=True, params={"model": "minilm"}).save(tmp_path / "b.json")
    results = load_results([tmp_path / "a.json", tmp_path / "b.json"])
    text = format_table(results)
    lines = text.splitlines()
    assert lines[0].split() == ["bm25", "dense", "dense", "-", "bm25"]
    ndcg_line = next(line for line in lines if line.startswith("nDCG@10 "))
    base, gain = sum(EXPECTED_NDCG) / 5, (1 - 1 / LOG2(3)) / 5  # only q1 improves, from rank 2 to rank 1
    assert ndcg_line.split() == ["nDCG@10", f"{base:.4f}", f"{base + gain:.4f}", f"+{gain:.4f}"]
    assert "1,500.0" in text
    assert "hit" in text
    assert "minilm" in text
    assert next(line for line in lines if "win/tie/loss" in line).split()[-1] == "1/4/0"
    markdown = format_markdown_table(results).splitlines()
    assert markdown[0] == "|  | bm25 | dense | dense - bm25 |"
    assert f"| nDCG@10 | {base:.4f} | {base + gain:.4f} | +{gain:.4f} |" in markdown
    assert len({row.count("|") for row in markdown}) == 1


def test_format_table_needs_results() -> None:
    with pytest.raises(ValueError, match="at least one"):
        format_table([])


def test_plot_writes_a_png_of_sensible_size(tmp_path: Path) -> None:
    path = plot([_result("bm25", RUN), _result("dense", _better_run())], tmp_path / "plots" / "cmp.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert 800 <= width <= 3000
    assert 300 <= height <= 1500
    assert len(data) > 10_000


# --- benchmarks/run.py ----------------------------------------------------------------------------

GOOD_BENCH = """
def run(size: str = "small") -> list[dict]:
    return [
        {"benchmark": "search", "ours": 2000.0, "peer": 1000.0, "unit": "queries/s", "ratio": 2.0, "note": size},
        {"benchmark": "build", "ours": 3.0, "peer": 12.0, "unit": "s", "note": "ratio left out"},
    ]
"""
BROKEN_BENCH = 'def run(size: str = "small"):\n    raise RuntimeError("boom at " + size)\n'
BAD_ROWS_BENCH = 'def run(size: str = "small"):\n    return [{"benchmark": "x", "unit": "s"}]\n'


@pytest.fixture
def runner():
    spec = importlib.util.spec_from_file_location("needle_bench_runner", REPO / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture
def bench_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "benches"
    folder.mkdir()
    (folder / "bench_good.py").write_text(GOOD_BENCH)
    (folder / "bench_broken.py").write_text(BROKEN_BENCH)
    (folder / "bench_badrows.py").write_text(BAD_ROWS_BENCH)
    (folder / "helper.py").write_text("raise SystemExit('not a benchmark: must not be imported')\n")
    return folder


def test_runner_tabulates_rows_and_reports_failing_modules(runner, bench_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "results" / "RESULTS.md"
    assert runner.main(["--bench-dir", str(bench_dir), "--out", str(out), "--size", "large"]) == 1
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| Module | Benchmark | Ours | Peer | Unit | Ours / peer |")
    assert "| good | search | 2,000 | 1,000 | queries/s | 2.00x | large |" in rows
    assert "| good | build | 3.00 | 12.00 | s | 0.25x | ratio left out |" in rows
    assert "| broken | **ERROR** | - | - |  | - | RuntimeError: boom at large |" in rows
    assert any(row.startswith("| badrows | **ERROR** |") and "lacks key 'ours'" in row for row in rows)
    assert "Failed: badrows, broken" in text


def test_runner_only_selects_modules(runner, bench_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "R.md"
    assert runner.main(["--bench-dir", str(bench_dir), "--out", str(out), "--only", "bench_good"]) == 0
    assert "| good | search |" in out.read_text()
    assert "broken" not in out.read_text()
    with pytest.raises(SystemExit) as caught:
        runner.main(["--bench-dir", str(bench_dir), "--out", str(out), "--only", "nope"])
    assert caught.value.code == 2


def test_runner_works_as_a_script(bench_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "R.md"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "run.py"),
            "--bench-dir",
            str(bench_dir),
            "--out",
            str(out),
            "--only",
            "good,broken",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "| good | search |" in done.stdout
    assert "RuntimeError: boom at small" in done.stderr
    assert out.read_text() in done.stdout


def test_results_written_before_the_timing_fields_still_load_and_compare(tmp_path: Path) -> None:
    timed = _result(
        "dense",
        _better_run(),
        index_reused=True,
        model_load_seconds=1.5,
        timings=SearchTimings(
            queries_per_second=90.0, warmup_seconds=0.2, latency_p50_ms=12.3, latency_p99_ms=30.5, latency_queries=5
        ),
    )
    timed.save(tmp_path / "new.json")
    old = json.loads(_result("bm25", RUN, queries_per_second=700.0, index_build_seconds=2.0).to_json())
    for key in ("index_reused", "model_load_seconds", "warmup_seconds", "latency_p50_ms", "latency_p99_ms"):
        del old[key]
    del old["latency_queries"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    before, after = load_results([tmp_path / "old.json", tmp_path / "new.json"])
    assert (before.latency_p50_ms, before.index_reused, before.index_build_seconds) == (None, None, 2.0)
    assert after == timed
    rows = {line.split("  ")[0]: line.split() for line in format_table([before, after]).splitlines()}
    assert rows["latency p50 (ms)"][-2:] == ["n/a", "12.3"]
    assert rows["latency p99 (ms)"][-2:] == ["n/a", "30.5"]
    assert rows["queries/s"][-2:] == ["700.0", "90.0"]
    assert rows["index build (s)"][-2:] == ["2.00", "reused"]
    assert rows["model load (s)"][-2:] == ["n/a", "1.50"]
    assert rows["latency queries"][-4:] == ["n/a", "5", "of", "5"]
    assert before.fusion is None  # written before eval recorded its fusion
    assert rows["fusion"][-2:] == ["none", "none"]


def test_the_table_names_each_run_s_fusion_with_the_values_its_mode_uses(tmp_path: Path) -> None:
    tuned = FusionSetting("tuned", Fusion(Mix(0.15, 0.4, 0.03, 50.0), 2, {}), tmp_path / "fusion.json")
    skipped = SearchTimings(queries_per_second=90.0, warmup_seconds=0.2, latency_p50_ms=None, latency_p99_ms=None,
                            latency_queries=0)  # fmt: skip
    runs = [
        _result("hybrid", RUN, fusion=DEFAULT_FUSION.record()),
        dataclasses.replace(_result("hybrid", _better_run(), fusion=tuned.record()), name="tuned"),
        _result("rrf", RUN, fusion=tuned.record()),
        _result("dense", RUN, timings=skipped),
    ]
    rows = {line.split("  ")[0]: line.split() for line in format_table(runs).splitlines()}
    cells = " ".join(rows["fusion"][1:])
    assert cells == "default: mix 0.4/0.3/1/6 tuned: mix 0.15/0.4/0.03/50 tuned: k 2 none"
    assert rows["latency queries"][-1] == "skipped"
    assert rows["latency p50 (ms)"][-1] == "n/a"
    assert EvalResult.from_json(runs[1].to_json()).fusion == tuned.record()
