"""`needle search --min-score X` and ``Searcher(min_score=X)`` on a real index of the sample corpus (MiniLM, FAISS,
bm25s): the final hits of each mode scoring below X are dropped (after fusion in hybrid and rrf mode), the rest come
back as before in the same ``--json`` shape, and without the flag nothing changes."""

import json
from pathlib import Path
from typing import Any

import pytest

from needle_retrieval.cli import main
from needle_retrieval.defaults import DEFAULT_MODEL
from needle_retrieval.index.build import build_index
from needle_retrieval.search.searcher import Searcher
from tests.support.cli import search_json
from tests.support.paths import SAMPLE

MODES = ("dense", "bm25", "hybrid", "rrf")  # the modes of the --bm25 index built here (no learned sparse part)

QUERIES = ["compress data with gzip", "parse command line arguments", "zip"]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("min-score") / "index"
    build_index(SAMPLE, out, model=DEFAULT_MODEL, overwrite=False, bm25=True)
    return out


def score(hit: dict[str, Any]) -> float:
    return float(hit["score"])


def middle_score(hits: list[dict[str, Any]]) -> float:
    """A score of these hits with distinct scores above and below it."""
    distinct = sorted({score(hit) for hit in hits})
    assert len(distinct) >= 3, hits
    return distinct[len(distinct) // 2]


@pytest.mark.parametrize("mode", MODES)
def test_min_score_drops_exactly_the_final_hits_below_it(
    index: Path, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = search_json(capsys, str(index), *QUERIES, "--mode", mode, "--top-k", "10")
    threshold = middle_score(everything[0])
    got = search_json(capsys, str(index), *QUERIES, "--mode", mode, "--top-k", "10", "--min-score", repr(threshold))
    assert got == [[hit for hit in hits if score(hit) >= threshold] for hits in everything]
    assert sum(map(len, got)) < sum(map(len, everything))
    assert {tuple(hit) for hits in got for hit in hits} == {("id", "score", "content")}


def test_min_score_goes_with_a_queries_run(index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"q{i}\t{text}\n" for i, text in enumerate(QUERIES)), encoding="utf-8")
    everything = search_json(capsys, str(index), QUERIES[0], "--mode", "bm25", "--top-k", "20")[0]
    threshold = middle_score(everything)
    argv = ["search", str(index), "--queries", str(queries), "--mode", "bm25", "--json", "--min-score", str(threshold)]
    assert main(argv) == 0
    run = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [hit["id"] for hit in run[0]["hits"]] == [hit["id"] for hit in everything if score(hit) >= threshold]
    assert all(hit["score"] >= threshold for answer in run for hit in answer["hits"])


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_without_min_score_the_hits_are_unchanged(index: Path, mode: str) -> None:
    """The default sets no threshold on the pipeline, and answers what a threshold below every score answers."""
    plain: Any = Searcher(index, mode, 10)
    answering = plain.runner.plan.answering
    assert plain.pipeline.get_component(answering).score_threshold is None
    lowest: Any = Searcher(index, mode, 10, min_score=-1e300)
    assert lowest.pipeline.get_component(answering).score_threshold == -1e300
    shown = [[(d.id, d.score, d.content) for d in docs] for docs in plain.search(QUERIES)]
    assert shown == [[(d.id, d.score, d.content) for d in docs] for docs in lowest.search(QUERIES)]


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "abc", "1e999"])
def test_a_bad_min_score_is_one_line_naming_the_flag(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["search", "no-such-index", "zip", f"--min-score={bad}"])
    assert exited.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error
    assert "argument --min-score: must be a finite number" in error


def test_a_negative_min_score_is_a_score_not_a_flag(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Dense scores may be negative (cosine, FAISS's negated L2): -0.5 is read as a number."""
    everything = search_json(capsys, str(index), "zip", "--mode", "dense", "--top-k", "5")
    assert (
        search_json(capsys, str(index), "zip", "--mode", "dense", "--top-k", "5", "--min-score", "-0.5") == everything
    )


def test_searcher_refuses_a_bad_min_score_by_name(index: Path) -> None:
    with pytest.raises(ValueError, match=r"^min_score must be None or a finite number"):
        Searcher(index, "bm25", 10, min_score=float("nan"))
