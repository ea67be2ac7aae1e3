"""`needle eval --run-file`: the TREC run holds the retrieval scores of the rankings it scored, not made-up ones.

A small BEIR dataset built from the sample corpus, BM25 (no model): the run's lines per query are what the
index's searcher answers at eval's depth, and pytrec_eval on the file gives eval's own nDCG@10.
"""

import json
from pathlib import Path

import pytest
import pytrec_eval

from needle.cli import main
from needle.search.searcher import Searcher
from tests.support.beir import SAMPLE_QUERIES, write_sample_dataset

QUERIES = {qid: SAMPLE_QUERIES[qid] for qid in ("q1", "q2", "q3", "q4")}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sample_dataset(tmp_path_factory.mktemp("beir") / "pydocs", QUERIES)


def test_the_run_file_holds_the_retrieval_scores_and_scores_as_eval_does(dataset: Path, tmp_path: Path) -> None:
    run, result, index = tmp_path / "run.trec", tmp_path / "r.json", tmp_path / "ix"
    argv = ["eval", str(dataset), "--mode", "bm25", "--index-dir", str(index), "--latency-queries", "2"]
    assert main([*argv, "--run-file", str(run), "--json", str(result)]) == 0
    rows = [line.split(" ") for line in run.read_text().splitlines()]
    searcher = Searcher(index, mode="bm25", top_k=100)
    answers = searcher.search([text for text, _ in QUERIES.values()])
    for qid, docs in zip(QUERIES, answers, strict=True):
        mine = [row for row in rows if row[0] == qid]
        assert [(row[2], int(row[3]), float(row[4]), row[5]) for row in mine] == [
            (d.id, rank, d.score, "bm25") for rank, d in enumerate(docs, 1)
        ]
    scored = pytrec_eval.RelevanceEvaluator(
        {qid: {doc: 1} for qid, (_, doc) in QUERIES.items()}, {"ndcg_cut.10"}
    ).evaluate({qid: {row[2]: float(row[4]) for row in rows if row[0] == qid} for qid in QUERIES})
    ndcg = sum(s["ndcg_cut_10"] for s in scored.values()) / len(QUERIES)
    assert ndcg == pytest.approx(json.loads(result.read_text())["metrics"]["ndcg@10"], abs=1e-12)


def test_a_run_file_in_a_missing_directory_is_refused_before_any_search(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "no" / "run.trec"
    assert (
        main(["eval", str(dataset), "--mode", "bm25", "--index-dir", str(tmp_path / "ix"), "--run-file", str(run)]) == 2
    )
    assert f"--run-file {run}: directory {run.parent} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "ix").exists()
