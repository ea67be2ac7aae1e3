"""A small BEIR dataset built from the sample corpus, for the eval and tune tests."""

import json
from pathlib import Path

from tests.support.paths import SAMPLE


def write_sample_corpus(root: Path) -> Path:
    """Create ROOT/qrels/ and ROOT/corpus.jsonl: the first passage of every sample module, in BEIR's fields."""
    (root / "qrels").mkdir(parents=True)
    with SAMPLE.open() as src, (root / "corpus.jsonl").open("w") as dst:
        for line in src:
            row = json.loads(line)
            if row["id"].endswith("-0"):
                dst.write(json.dumps({"_id": row["id"], "title": row["title"], "text": row["contents"]}) + "\n")
    return root


# Queries of the sample corpus, each with the one passage that answers it.
SAMPLE_QUERIES = {
    "q1": ("parse command line arguments and options", "argparse-0"),
    "q2": ("read and write ZIP archive files", "zipfile-0"),
    "q3": ("gzip compressed files", "gzip-0"),
    "q4": ("regular expression matching operations", "re-0"),
    "q5": ("comma separated values reading and writing", "csv-0"),
    "q6": ("DB-API interface to SQLite databases", "sqlite3-0"),
}


def write_sample_dataset(root: Path, queries: dict[str, tuple[str, str]], unjudged: str | None = None) -> Path:
    """``write_sample_corpus`` plus ROOT/queries.jsonl (QUERIES, and UNJUDGED as a query no qrel names) and
    ROOT/qrels/test.tsv (each query's one relevant passage)."""
    write_sample_corpus(root)
    with (root / "queries.jsonl").open("w") as f:
        for qid, (text, _) in queries.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
        if unjudged is not None:
            f.write(json.dumps({"_id": "unjudged", "text": unjudged}) + "\n")
    rows = [f"{qid}\t{doc}\t1" for qid, (_, doc) in queries.items()]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return root
