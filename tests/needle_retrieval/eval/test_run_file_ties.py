"""One system, one figure: pytrec_eval scores the run files of `needle eval --run-file` and `needle search --queries`
to exactly the nDCG@10 and MAP@100 `needle eval` reports, in the fused modes, where scores tie.

trec_eval (and pytrec_eval, its C code) re-sorts each query's run by score, and tied scores by doc id, descending;
needle ranks in the pipeline's order. The sample BEIR dataset gets two copies of every answer passage (``aa-`` and
``zz-`` ids, same title and text, so the same scores), and each query is judged by the document the pipeline puts
first in a group of tied scores where trec_eval's rule would put it lower: a run whose written scores let trec_eval
reorder a tie scores that query differently from needle.
"""

import json
from pathlib import Path

import pytest
import pytrec_eval

from needle_retrieval.cli import main
from needle_retrieval.search.searcher import Searcher
from tests.support.beir import SAMPLE_QUERIES, write_sample_dataset

Qrels = dict[str, dict[str, int]]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample BEIR dataset with an ``aa-`` and a ``zz-`` copy of every judged passage."""
    root = write_sample_dataset(tmp_path_factory.mktemp("beir") / "pydocs", SAMPLE_QUERIES)
    corpus = root / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    answers = {doc for _, doc in SAMPLE_QUERIES.values()}
    copies = [row | {"_id": prefix + row["_id"]} for row in rows if row["_id"] in answers for prefix in ("aa-", "zz-")]
    with corpus.open("a") as f:
        f.writelines(json.dumps(row) + "\n" for row in copies)
    return root


def tied_judgements(index: Path, mode: str) -> Qrels:
    """For each query whose answer has a group of tied scores in which the pipeline's first document is not the
    one trec_eval puts first (the greatest id), that document as the query's one relevant document."""
    answers = Searcher(index, mode=mode, top_k=100).search([text for text, _ in SAMPLE_QUERIES.values()])
    qrels: Qrels = {}
    for qid, docs in zip(SAMPLE_QUERIES, answers, strict=True):
        groups: dict[float, list[str]] = {}
        for doc in docs:
            assert doc.score is not None
            groups.setdefault(doc.score, []).append(doc.id)
        tied = [ids[0] for ids in groups.values() if len(ids) > 1 and ids[0] != max(ids)]
        if tied:
            qrels[qid] = {tied[0]: 1}
    return qrels


def trec_scores(run_file: Path, qrels: Qrels) -> dict[str, float]:
    """pytrec_eval's mean nDCG@10 and MAP@100 of the TREC run in RUN_FILE over QRELS."""
    run: dict[str, dict[str, float]] = {}
    for line in run_file.read_text().splitlines():
        qid, _, doc_id, _, score, _ = line.split(" ")
        run.setdefault(qid, {})[doc_id] = float(score)
    scored = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.100"}).evaluate(run)
    return {
        "ndcg@10": sum(s["ndcg_cut_10"] for s in scored.values()) / len(qrels),
        "map@100": sum(s["map_cut_100"] for s in scored.values()) / len(qrels),
    }


@pytest.mark.parametrize("mode", ["rrf", "hybrid"])
def test_pytrec_eval_scores_the_run_files_as_needle_eval_does_with_ties(
    dataset: Path, tmp_path: Path, tiny_model: str, mode: str
) -> None:
    index, result, run, searched = tmp_path / "ix", tmp_path / "r.json", tmp_path / "eval.trec", tmp_path / "s.trec"
    argv = ["eval", str(dataset), "--mode", mode, "--model", tiny_model, "--index-dir", str(index)]
    assert main([*argv, "--latency-queries", "0"]) == 0  # builds the index the judgements are read from
    qrels = tied_judgements(index, mode)
    assert qrels, "no tied scores to test with"
    (dataset / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{qid}\t{next(iter(docs))}\t1\n" for qid, docs in qrels.items())
    )
    assert main([*argv, "--latency-queries", "0", "--run-file", str(run), "--json", str(result)]) == 0
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"_id": q, "text": SAMPLE_QUERIES[q][0]}) + "\n" for q in qrels))
    assert main(["search", str(index), "--mode", mode, "--queries", str(queries), "--output", str(searched)]) == 0
    reported = json.loads(result.read_text())["metrics"]
    for written in (run, searched):
        figures = trec_scores(written, qrels)
        assert figures["ndcg@10"] == pytest.approx(reported["ndcg@10"], abs=1e-12), written.name
        assert figures["map@100"] == pytest.approx(reported["map@100"], abs=1e-12), written.name
