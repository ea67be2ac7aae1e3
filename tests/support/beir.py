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
