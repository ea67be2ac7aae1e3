"""BM25 over a corpus without a single indexable word: the index builds, and every query answers no hits.

A corpus of stopwords only, or of text the tokenizer drops entirely ("x\\u0000y": two one-letter words), is a
valid corpus: its BM25 index has an empty vocabulary. The numba warm-up used to probe the kernels with the
vocabulary's first term, so every search (store, retriever, `needle search`) died with a bare StopIteration.
"""

import json
from pathlib import Path

import pytest
from haystack import Document

from components.retrievers.bm25.batch_retriever import BM25BatchRetriever
from components.retrievers.bm25.retriever import BM25Retriever
from components.stores.bm25.document_store import BM25DocumentStore
from needle_retrieval.cli import main
from tests.support.cli import search_json

CORPORA = {"stopwords": ["the a an of", "is it the and"], "nul": ["x\u0000y"]}


@pytest.fixture(params=sorted(CORPORA))
def texts(request: pytest.FixtureRequest) -> list[str]:
    """The documents of a corpus whose BM25 vocabulary is empty."""
    return CORPORA[request.param]


def saved_store(tmp_path: Path, texts: list[str]) -> BM25DocumentStore:
    """A store saved to disk with TEXTS, then opened again (so its main segment is the built, empty one)."""
    path = str(tmp_path / "bm25")
    BM25DocumentStore(path=path).write_documents([Document(id=f"d{i}", content=t) for i, t in enumerate(texts)])
    return BM25DocumentStore(path=path)


def test_store_warms_up_and_answers_no_hits(tmp_path: Path, texts: list[str]) -> None:
    """With either scoring backend, warm-up (every thread count) succeeds and single, batch, shared-hits and
    filtered searches return nothing."""
    saved_store(tmp_path, texts)
    for backend in ("numba", "numpy"):
        store = BM25DocumentStore(path=str(tmp_path / "bm25"), backend=backend)
        store.warm_up()
        store.warm_up(n_threads=2)
        assert store.count_documents() == len(texts)
        assert store.bm25_retrieval("the x y") == []
        assert store.bm25_retrieval_batch(["the", "x y", "anything at all"], n_threads=2) == [[], [], []]
        assert store.bm25_shared_hits_batch(["x"]) == [([], [])]
        assert store.bm25_retrieval("x", filters={"field": "id", "operator": "==", "value": "d0"}) == []


def test_retrievers_warm_up_and_answer_no_hits(tmp_path: Path, texts: list[str]) -> None:
    """Both BM25 retrievers (what the pipelines run) warm up and return empty lists."""
    store = saved_store(tmp_path, texts)
    single, batch = BM25Retriever(document_store=store), BM25BatchRetriever(document_store=store, n_threads=2)
    single.warm_up()
    batch.warm_up()
    assert single.run(query="the x")["documents"] == []
    assert batch.run(queries=["the", "y"])["documents"] == [[], []]


def test_store_becomes_searchable_once_a_word_is_written(tmp_path: Path, texts: list[str]) -> None:
    """The empty vocabulary is no dead end: a later document with a real word is found by it."""
    store = saved_store(tmp_path, texts)
    store.warm_up()
    store.write_documents([Document(id="real", content="volcano eruption")])
    assert [d.id for d in store.bm25_retrieval("volcano")] == ["real"]


def write_corpus(tmp_path: Path, texts: list[str]) -> Path:
    """TEXTS as a JSONL corpus (json.dumps writes the NUL as \\u0000, as a real corpus file would hold it)."""
    corpus = tmp_path / "corpus.jsonl"
    lines = (json.dumps({"id": f"d{i}", "contents": t}) for i, t in enumerate(texts))
    corpus.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return corpus


def test_cli_bm25_index_builds_and_every_search_answers_no_hits(
    tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`needle index CORPUS --bm25 --no-dense` exits 0; `needle search --mode bm25 --json` exits 0 with [[]]."""
    out = tmp_path / "index"
    assert main(["index", str(write_corpus(tmp_path, texts)), "--out", str(out), "--bm25", "--no-dense"]) == 0
    assert search_json(capsys, str(out), "q", "--mode", "bm25") == [[]]
    assert search_json(capsys, str(out), "the", "x y", "--mode", "bm25") == [[], []]


def test_cli_hybrid_search_still_answers_with_the_dense_hits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dense + BM25 over a stopwords-only corpus: hybrid search returns the dense hits (BM25 adds none)."""
    out = tmp_path / "index"
    assert main(["index", str(write_corpus(tmp_path, CORPORA["stopwords"])), "--out", str(out), "--bm25"]) == 0
    hits = search_json(capsys, str(out), "the", "--mode", "hybrid")
    assert len(hits) == 1
    assert sorted(str(hit["id"]) for hit in hits[0]) == ["d0", "d1"]
