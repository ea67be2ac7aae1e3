"""Fusion as a visible, reversible setting (issue 26): eval names the fusion it searched with, `needle tune --reset`
brings the default figures back, `needle tune --out FILE` writes a fit without installing it, `--fusion FILE` or
`--fusion default` applies one to a single run, and a fitted value is installed only when it helps training
queries it was not fitted on.

Real parts throughout: tests/needle_retrieval/tune/test_command.py's small BEIR dataset of the sample corpus, MiniLM,
FAISS and bm25s. The tests of the search/eval flags run once needle_retrieval/cli.py defines them (and Searcher takes a
fusion setting).
"""

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Document

from components.joiners.rrf_batch_joiner import RRF_K
from needle_retrieval.cli import main
from needle_retrieval.eval.command import evaluate
from needle_retrieval.index.generations import live_name
from needle_retrieval.pipelines.fusion import (
    DEFAULT_FUSION,
    Fusion,
    Mix,
    file_fusion,
    fusion_option,
    read_fusion,
    write_fusion_file,
)
from needle_retrieval.serve.pipelines import ServedPipelines, deploy_all
from needle_retrieval.tune import fit as fusion_fit
from needle_retrieval.tune.command import fit, format_check

from .test_command import write_dataset

ALL_DENSE = Fusion(Mix(baseline=1.0, amplitude=0.0, slope=1.0, midpoint=6.0), RRF_K, {"note": "by hand"})
QUERY = "read and write ZIP archive files"
Fitted = tuple[Path, Path, Path, dict[str, Any]]  # the fitted_out fixture


def eval_json(dataset: Path, index: Path, model: str, out: Path, *flags: str) -> dict[str, Any]:
    """`needle eval --mode hybrid --split train` of INDEX (plus FLAGS); returns the --json result."""
    argv = ["eval", str(dataset), "--mode", "hybrid", "--split", "train", "--index-dir", str(index)]
    assert main([*argv, "--model", model, "--json", str(out), *flags]) == 0
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def live_mix(index: Path) -> dict[str, float]:
    """The mix curve the live generation's hybrid_search.yaml carries."""
    saved = yaml.safe_load((index / str(live_name(index)) / "hybrid_search.yaml").read_text())
    params = saved["components"]["mix"]["init_parameters"]
    return {key: params[key] for key in ("baseline", "amplitude", "slope", "midpoint")}


def fusion_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The `fusion` row of the table `needle eval` printed last."""
    return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fusion "))


def test_tune_then_reset_round_trips_eval_to_the_default_figures(
    tmp_path: Path, minilm_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset, index = write_dataset(tmp_path / "pydocs"), tmp_path / "index"
    before = eval_json(dataset, index, minilm_path, tmp_path / "before.json")
    assert before["fusion"] == DEFAULT_FUSION.record()
    assert fusion_line(capsys).split() == ["fusion", "default:", "mix", "0.4/0.3/1/6"]
    assert main(["tune", str(dataset), "--index-dir", str(index), "--model", minilm_path]) == 0
    tuned = eval_json(dataset, index, minilm_path, tmp_path / "tuned.json")
    fusion = read_fusion(index)
    assert fusion is not None
    values = {"mix": vars(fusion.mix), "rrf": {"k": fusion.rrf_k}}
    assert tuned["fusion"] == {"source": "tuned", "path": str(index / "fusion.json"), **values}
    assert "tuned: mix " + "/".join(f"{v:g}" for v in vars(fusion.mix).values()) in fusion_line(capsys)
    assert tuned["metrics"]["ndcg@10"] > before["metrics"]["ndcg@10"]  # the fit helps the split it was fitted on
    assert live_mix(index) == vars(fusion.mix)
    assert main(["tune", str(dataset), "--index-dir", str(index), "--model", minilm_path, "--reset"]) == 0
    assert "removed" in capsys.readouterr().out
    after = eval_json(dataset, index, minilm_path, tmp_path / "after.json")
    assert (after["metrics"], after["per_query_ndcg10"]) == (before["metrics"], before["per_query_ndcg10"])
    assert after["fusion"] == before["fusion"]
    assert not (index / "fusion.json").exists()
    assert live_mix(index) == vars(Mix())


def test_reset_of_no_index_is_a_one_line_error_and_removes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset, index = write_dataset(tmp_path / "pydocs"), tmp_path / "not-an-index"
    index.mkdir()
    write_fusion_file(index / "fusion.json", ALL_DENSE)
    assert main(["tune", str(dataset), "--index-dir", str(index), "--reset"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("needle: error:"), err
    assert read_fusion(index) == ALL_DENSE


@pytest.fixture(scope="module")
def fitted_out(tmp_path_factory: pytest.TempPathFactory, minilm_path: str) -> Fitted:
    """(dataset, index, FILE, --json report) after `needle tune --out FILE` on the train split."""
    base = tmp_path_factory.mktemp("tune-out")
    dataset, index, out, report = write_dataset(base / "pydocs"), base / "index", base / "fit.json", base / "r.json"
    argv = ["tune", str(dataset), "--index-dir", str(index), "--model", minilm_path, "--out", str(out)]
    assert main([*argv, "--json", str(report)]) == 0
    return dataset, index, out, json.loads(report.read_text())


def test_tune_out_writes_the_file_and_leaves_the_index_fusion_as_it_was(
    fitted_out: Fitted,
) -> None:
    _, index, out, report = fitted_out
    assert report["generation"] is None
    assert report["fusion_file"] == str(out)
    setting = fusion_option(str(out))
    assert (setting.source, setting.path) == ("file", out)
    assert setting.fusion.as_json() == report["fusion"]
    assert setting.fusion.mix != Mix()
    assert read_fusion(index) is None
    assert live_mix(index) == vars(Mix())


def served_ids(served: ServedPipelines, name: str) -> list[str]:
    """The ids the served pipeline NAME answers QUERY with, as the REST route runs it."""
    plan = served.plans[name]
    result = served.registry.get(name).pipeline.run(plan.feed(QUERY, 10), include_outputs_from={plan.answering})
    return [doc.id for doc in result[plan.answering]["documents"]]


def test_serve_fuses_with_the_setting_it_is_given_and_the_index_s_own_otherwise(
    fitted_out: Fitted, tmp_path: Path
) -> None:
    index = fitted_out[1]
    own = deploy_all(index)
    assert own.fusion == DEFAULT_FUSION
    dense = served_ids(own, "dense_search")
    assert served_ids(own, "hybrid_search") != dense  # the default mix gives BM25 a say on this query
    write_fusion_file(tmp_path / "all-dense.json", ALL_DENSE)
    given = deploy_all(index, file_fusion(tmp_path / "all-dense.json"))
    assert (given.fusion.source, given.fusion.fusion) == ("file", ALL_DENSE)
    assert served_ids(given, "hybrid_search") == dense  # weight 1 on the dense side: the dense order
    assert read_fusion(index) is None


def test_evaluate_with_a_fusion_file_or_the_defaults_for_one_run(
    fitted_out: Fitted, tmp_path: Path, minilm_path: str
) -> None:
    dataset, index, out, _ = fitted_out
    copy = tmp_path / "index"
    shutil.copytree(index, copy)

    def run(**options: Any) -> Any:
        return evaluate(dataset, split="train", mode="hybrid", model=minilm_path, index_dir=copy, **options)

    default, with_file = run(latency_queries=0), run(fusion=file_fusion(out), latency_queries=0)
    assert with_file.fusion == file_fusion(out).record()
    assert with_file.metrics["ndcg@10"] > default.metrics["ndcg@10"]
    assert read_fusion(copy) is None  # for that run only
    shutil.copyfile(out, copy / "fusion.json")  # installed by hand
    assert run().metrics == with_file.metrics
    forced = run(fusion=DEFAULT_FUSION)
    assert (forced.metrics, forced.fusion) == (default.metrics, DEFAULT_FUSION.record())


def test_eval_fusion_flag_names_its_file_in_json_and_table(
    fitted_out: Fitted, tmp_path: Path, minilm_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset, index, out, _ = fitted_out
    result = eval_json(dataset, index, minilm_path, tmp_path / "r.json", "--fusion", str(out))
    assert result["fusion"] == file_fusion(out).record()
    assert fusion_line(capsys).split()[1] == "file:"
    forced = eval_json(dataset, index, minilm_path, tmp_path / "d.json", "--fusion", "default")
    assert forced["fusion"] == DEFAULT_FUSION.record()
    assert read_fusion(index) is None


def test_a_bad_fusion_file_is_a_one_line_error_naming_file_and_field(
    fitted_out: Fitted, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(ALL_DENSE.as_json() | {"rrf": {"k": 0}}))
    with pytest.raises(SystemExit) as exited:  # a usage error: argparse's exit, before anything loads
        main(["eval", str(fitted_out[0]), "--mode", "hybrid", "--fusion", str(bad)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "bad.json" in err, err
    assert "rrf.k" in err, err


def test_search_fusion_flag_applies_the_file_for_that_search(
    fitted_out: Fitted, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = fitted_out[1]
    write_fusion_file(tmp_path / "all-dense.json", ALL_DENSE)

    def ids(*flags: str) -> list[str]:
        capsys.readouterr()
        assert main(["search", str(index), QUERY, "--top-k", "10", "--json", *flags]) == 0
        return [hit["id"] for hit in json.loads(capsys.readouterr().out)[0]]

    assert ids("--mode", "hybrid", "--fusion", str(tmp_path / "all-dense.json")) == ids("--mode", "dense")
    assert ids("--mode", "hybrid") != ids("--mode", "dense")


def test_latency_queries_zero_skips_the_single_query_pass(
    fitted_out: Fitted, tmp_path: Path, minilm_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset, index, _, _ = fitted_out
    result = eval_json(dataset, index, minilm_path, tmp_path / "r.json", "--latency-queries", "0")
    assert (result["latency_queries"], result["latency_p50_ms"], result["latency_p99_ms"]) == (0, None, None)
    assert result["queries_per_second"] > 0
    rows = {line.split("  ")[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert rows["latency queries"][-1] == "skipped"


def lists(kinds: str) -> tuple[list[str], list[list[Document]], list[list[Document]], list[dict[str, int]]]:
    """One query per letter of KINDS, each with dense [C, B] and BM25 [A, B]: RRF with k = 1 ties all three and
    keeps BM25's A first, any k > 1 puts B (found by both) first. "a": A is relevant, "b": B is."""
    queries = [f"query {i}" for i in range(len(kinds))]
    dense = [[Document(id=f"{i}C", score=0.9), Document(id=f"{i}B", score=0.8)] for i in range(len(kinds))]
    sparse = [[Document(id=f"{i}A", score=5.0), Document(id=f"{i}B", score=4.0)] for i in range(len(kinds))]
    qrels = [{f"{i}{kind.upper()}": 1} for i, kind in enumerate(kinds)]
    return queries, dense, sparse, qrels


@pytest.mark.parametrize(
    ("kinds", "k", "kept"),
    [
        ("aaaaaaaaaa", 1, True),  # held out (the 5th and 10th) like the rest: k = 1 helps them too
        ("aaaabaaaab", RRF_K, False),  # fitted on the "a" queries, k = 1 ranks the held-out ones worse
    ],
)
def test_rrf_k_is_installed_only_when_it_beats_the_default_on_held_out_queries(kinds: str, k: int, kept: bool) -> None:
    fusion = fit(fusion_fit.candidate_matrices(*lists(kinds)), {"split": "train"})
    held = fusion.fitted_on["held_out"]["rrf"]
    assert (fusion.rrf_k, held["kept"], held["value"], held["queries"]) == (k, kept, 1, 2)
    assert (held["ndcg@10"]["fitted"] > held["ndcg@10"]["default"]) is kept
    line = next(line for line in format_check(fusion.fitted_on["held_out"], "train", 10) if "rrf" in line)
    assert ("not kept" in line) is not kept


def test_too_few_training_queries_to_hold_any_out_record_the_defaults() -> None:
    fusion = fit(fusion_fit.candidate_matrices(*lists("aaaa")), {"split": "train"})
    assert (fusion.mix, fusion.rrf_k) == (Mix(), RRF_K)
    assert fusion.fitted_on["held_out"]["rrf"]["queries"] == 0
    assert "the defaults are recorded" in format_check(fusion.fitted_on["held_out"], "train", 4)[0]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot be read"),
        ("{", "not valid JSON"),
        (json.dumps({"schema": "needle.fusion/1"}), "fitted_on is missing"),
    ],
)
def test_a_fusion_option_file_is_parsed_strictly(tmp_path: Path, content: str | None, fragment: str) -> None:
    path = tmp_path / "fusion-file.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        fusion_option(str(path))
    assert "fusion-file.json" in str(caught.value)
    assert fragment in str(caught.value)
    assert fusion_option("default") == DEFAULT_FUSION
