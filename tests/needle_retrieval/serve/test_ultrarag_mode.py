"""Which search UltraRAG's face answers with: the dense part by default (UltraRAG's ``retriever_search`` is dense),
BM25 on an index that has no dense part, and the mode `needle serve --ultrarag-mode` names, which reaches the MCP tool
``retriever_search`` as well as ``POST /search`` because the served index carries it."""

import asyncio
import json
from pathlib import Path

import pytest

from needle_retrieval import build_index
from needle_retrieval.defaults import DEFAULT_MODEL
from needle_retrieval.errors import NeedleError
from needle_retrieval.search.searcher import Searcher
from needle_retrieval.serve.mcp_tools import IndexTools, opened
from needle_retrieval.serve.pipelines import deploy_all
from needle_retrieval.serve.ultrarag import deploy_ultrarag
from tests.support.serve import sample_index

pytestmark = pytest.mark.integration
QUERIES = ["parse command line options", "read and write zip archives", "run code in a thread", "regular expressions"]


@pytest.fixture(scope="module")
def bm25_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BM25-only index of three documents (no model is loaded)."""
    tmp = tmp_path_factory.mktemp("bm25-only")
    corpus = tmp / "corpus.jsonl"
    rows = [{"id": str(i), "contents": text} for i, text in enumerate(["zip files", "thread locks", "regex groups"])]
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    build_index(corpus, tmp / "index", model=DEFAULT_MODEL, overwrite=False, dense=False, bm25=True)
    return tmp / "index"


def test_a_bm25_only_index_answers_with_bm25(bm25_only: Path) -> None:
    search = deploy_ultrarag(deploy_all(bm25_only))
    assert search.name == "bm25_batch_search"
    assert search.collections is None  # UltraRAG's collection_name means nothing here


def test_a_list_the_search_left_short_is_filled_as_ultrarags(bm25_only: Path) -> None:
    """A query BM25 matches nowhere found nothing; UltraRAG answers top_k passages, the corpus's first ones."""
    search = deploy_ultrarag(deploy_all(bm25_only))
    hits = asyncio.run(search.search(["banana", "regex"], 2, ""))
    assert [[doc.content for doc in docs] for docs in hits] == [
        ["zip files", "thread locks"],
        ["regex groups", "zip files"],
    ]


def test_a_mode_the_index_cannot_serve_stops_the_start_up(bm25_only: Path) -> None:
    with pytest.raises(NeedleError, match=r"--ultrarag-mode hybrid: index .* serves bm25$"):
        deploy_all(bm25_only, ultrarag_mode="hybrid")


def test_the_configured_mode_reaches_the_mcp_tool(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`needle mcp`'s path: the tool deploys its search on first use, from the served index alone."""
    index = sample_index(tmp_path_factory)
    served = deploy_all(index, ultrarag_mode="hybrid")
    tools = IndexTools(open=opened(served))
    passages = asyncio.run(tools.passages(None, QUERIES, 7))
    hybrid = [[doc.content for doc in docs] for docs in Searcher(index, mode="hybrid", top_k=7).search(QUERIES)]
    dense = [[doc.content for doc in docs] for docs in Searcher(index, mode="dense", top_k=7).search(QUERIES)]
    assert passages == hybrid
    assert hybrid != dense  # else this test could not tell the modes apart
    assert tools.searches[""][1].name == "hybrid_batch_search"


def test_needle_serves_search_in_the_mode_it_is_given(tmp_path_factory: pytest.TempPathFactory) -> None:
    """What `needle serve --ultrarag-mode hybrid` builds: the start-up line names the mode, /search answers in it."""
    from fastapi.testclient import TestClient

    from needle_retrieval.serve.server import search_app

    index = sample_index(tmp_path_factory)
    app, names, _ = search_app(index, "127.0.0.1", [], None, None, False, ultrarag_mode="hybrid")
    assert "search (hybrid)" in names.split(", ")
    answer = TestClient(app, base_url="http://127.0.0.1").post("/search", json={"query_list": QUERIES, "top_k": 7})
    assert answer.status_code == 200, answer.text
    hybrid = Searcher(index, mode="hybrid", top_k=7).search(QUERIES)
    assert answer.json()["ret_psg"] == [[doc.content for doc in docs] for docs in hybrid]
