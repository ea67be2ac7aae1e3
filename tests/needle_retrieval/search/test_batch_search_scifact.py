"""Issue 26's check on SciFact: `needle search DIR --queries queries.jsonl --output run.trec` over a BM25 index
gives a run that pytrec_eval scores to the nDCG@10 `needle eval` reports for the same index."""

import json
from pathlib import Path

import pytest
import pytrec_eval

from needle_retrieval.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_searched_run_scores_as_needle_eval(scifact_dir: Path, tmp_path: Path) -> None:
    index, run, result = tmp_path / "bm25", tmp_path / "run.trec", tmp_path / "bm25.json"
    assert main(["index", str(scifact_dir / "corpus.jsonl"), "--out", str(index), "--bm25", "--no-dense"]) == 0
    assert main(["search", str(index), "--queries", str(scifact_dir / "queries.jsonl"), "--output", str(run)]) == 0
    argv = ["eval", str(scifact_dir), "--mode", "bm25", "--index-dir", str(index), "--latency-queries", "0"]
    assert main([*argv, "--json", str(result)]) == 0
    qrels: dict[str, dict[str, int]] = {}
    for line in (scifact_dir / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
    scores: dict[str, dict[str, float]] = {}
    for line in run.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split(" ")
        scores.setdefault(qid, {})[doc] = float(score)
    assert len(scores) == 1109  # every query of queries.jsonl, the 300 judged test queries among them
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(scores)
    ndcg = sum(measures["ndcg_cut_10"] for measures in per_query.values()) / len(qrels)
    expected = json.loads(result.read_text())["metrics"]["ndcg@10"]
    assert expected >= 0.67
    assert ndcg == pytest.approx(expected, abs=1e-9)
