"""Evaluation library behind ``needle eval``: load a BEIR split, score a run, report and compare.

Typical use (the CLI does exactly this)::

    dataset = load_beir("data/scifact", split="test")        # DatasetError on any bad file or id
    run = run_from_rankings({qid: [doc ids, best first] for qid in dataset.queries})
    scores = evaluate_run(run, dataset.qrels)                 # nDCG@10, Recall@10/100, MRR@10, MAP@100
    result = EvalResult.from_scores(scores, name="bm25", dataset=dataset.name, split=dataset.split,
                                    mode="bm25", queries_per_second=qps, index_build_seconds=build_s)
    result.save("bm25.json")                                  # schema: see needle_retrieval.eval.report
    print(format_table(load_results(["bm25.json", "dense.json"])))
    plot([bm25, dense], "compare.png")

The parts live in ``needle_retrieval.eval.beir`` (dataset), ``needle_retrieval.eval.metrics`` (pytrec_eval scoring and
why not ranx), ``needle_retrieval.eval.report`` (result, JSON schema), ``needle_retrieval.eval.table`` (side-by-side
tables) and ``needle_retrieval.eval.plot`` (PNG).
"""

from needle_retrieval.eval.beir import BeirDataset, DatasetError, load_beir
from needle_retrieval.eval.metrics import HEADLINE_METRICS, RunScores, evaluate_run, run_from_rankings
from needle_retrieval.eval.plot import plot
from needle_retrieval.eval.report import EvalResult, ResultFileError, load_results
from needle_retrieval.eval.table import format_markdown_table, format_table

__all__ = [
    "HEADLINE_METRICS",
    "BeirDataset",
    "DatasetError",
    "EvalResult",
    "ResultFileError",
    "RunScores",
    "evaluate_run",
    "format_markdown_table",
    "format_table",
    "load_beir",
    "load_results",
    "plot",
    "run_from_rankings",
]
