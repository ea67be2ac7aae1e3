"""`needle eval --run-file`: the TREC run holds the retrieval scores of the rankings it scored, not made-up ones.

A small BEIR dataset built from the sample corpus, BM25 (no model): the run's lines per query are what the
index's searcher answers at eval's depth, and pytrec_eval on the file gives eval's own nDCG@10.
"""

import json
from pathlib import Path

import pytest
import pytrec_eval

from needle_retrieval.cli import main
from needle_retrieval.search.searcher import Searcher
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
        assert [(row[2], int(row[3]), row[5]) for row in mine] == [
            (d.id, rank, "bm25") for rank, d in enumerate(docs, 1)
        ]
        # each score the retrieval's, a tie written a few 32-bit float steps below it (needle_retrieval.search.runs)
        assert [float(row[4]) for row in mine] == pytest.approx([d.score for d in docs], rel=1e-6)
        distinct = [d.score for i, d in enumerate(docs) if i == 0 or docs[i - 1].score != d.score]
        assert set(distinct) <= {float(row[4]) for row in mine}
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


def test_a_run_file_trec_cannot_hold_is_a_warning_and_the_evaluation_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A corpus id with a space cannot stand in a TREC run: the scores are still printed and saved, the run file
    is not written, and stderr says why."""
    root = tmp_path / "spaced"
    (root / "qrels").mkdir(parents=True)
    docs = {"doc 1": "zip archives are read and written", "doc2": "threads run code", "doc3": "regular expressions"}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in docs.items()))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "zip archives"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc 1\t1\n")
    run, result = tmp_path / "run.trec", tmp_path / "r.json"
    argv = ["eval", str(root), "--mode", "bm25", "--index-dir", str(tmp_path / "ix"), "--latency-queries", "0"]
    assert main([*argv, "--run-file", str(run), "--json", str(result)]) == 0
    err = capsys.readouterr().err
    assert f"--run-file {run} not written" in err
    assert "'doc 1' holds whitespace" in err
    assert json.loads(result.read_text())["metrics"]["ndcg@10"] == 1.0
    assert not run.exists()
