"""``Searcher(bm25_threads=N)``: the BM25 retriever scores a batch with N threads, and answers as with every core."""

from pathlib import Path

import pytest

from needle_retrieval import build_index
from needle_retrieval.search.searcher import Searcher
from tests.support.paths import SAMPLE

QUERIES = ["read and write ZIP files", "parse command line arguments", "json encoder", "thread", "sort a list"]


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus as a BM25-only index (no model)."""
    out = tmp_path_factory.mktemp("bm25") / "index"
    build_index(SAMPLE, out, model="unused", overwrite=False, dense=False, bm25=True)
    return out


def answers(searcher: Searcher) -> list[list[tuple[str | None, float | None]]]:
    """(id, score) of every hit of QUERIES."""
    return [[(doc.id, doc.score) for doc in docs] for docs in searcher.search(QUERIES)]


def test_bm25_threads_reach_the_retriever_and_change_no_answer(bm25_index: Path) -> None:
    every_core, one = Searcher(bm25_index, "bm25"), Searcher(bm25_index, "bm25", bm25_threads=1)
    assert one.pipeline.get_component("retriever").n_threads == 1  # type: ignore[attr-defined]
    assert every_core.pipeline.get_component("retriever").n_threads == -1  # type: ignore[attr-defined]
    assert answers(one) == answers(every_core)
