"""Helpers of the ``needle index --embeddings`` tests (tests/needle_retrieval/index/test_embeddings_in*.py): a small
corpus of `contents` passages, its rows as an outside encoder computes them, and in-process CLI runs."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from needle_retrieval.cli import main
from tests.support.paths import SAMPLE

Answers = list[list[dict[str, Any]]]  # `needle search --json`: per query, its hits
QUERIES = ["how to open a file for writing", "base64 encoding of binary data", "command line interpreter"]


def write_corpus(path: Path, passages: int = 40) -> list[str]:
    """PASSAGES passages of the sample corpus as `id`/`contents` lines at PATH; returns their contents."""
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:passages]]
    path.write_text("".join(json.dumps({"id": r["id"], "contents": r["contents"]}) + "\n" for r in records))
    return [r["contents"] for r in records]


def outside_rows(model: str, contents: list[str]) -> npt.NDArray[np.float32]:
    """CONTENTS encoded by MODEL with sentence-transformers directly, as a GPU run or UltraRAG would."""
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(model, device="cpu")
    return np.asarray(encoder.encode(contents, batch_size=16, precision="float32"), dtype=np.float32)


def search_json(capsys: pytest.CaptureFixture[str], index_dir: Path, *argv: str) -> Answers:
    """`needle search INDEX QUERIES... --json` in-process; the parsed answers."""
    capsys.readouterr()
    assert main(["search", str(index_dir), *QUERIES, "--json", *argv]) == 0
    answers: Answers = json.loads(capsys.readouterr().out)
    return answers


def hits(answers: Answers) -> list[list[tuple[str, float]]]:
    """(id, score) of every hit of every query."""
    return [[(hit["id"], hit["score"]) for hit in answer] for answer in answers]


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI expecting a user error: exit 2 and exactly one line on stderr, returned without its prefix."""
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("needle: error: ")
    return lines[0].removeprefix("needle: error: ")
