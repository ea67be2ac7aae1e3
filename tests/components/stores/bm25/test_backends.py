"""BM25 backends: numba is the default, it ranks and scores like numpy and raw bm25s, and its disk cache works."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import bm25s
import pytest
import Stemmer
from haystack import Document

from components.retrievers.bm25.batch_retriever import BM25BatchRetriever
from components.stores.bm25.document_store import BM25DocumentStore
from tests.support.paths import REPO


@pytest.fixture(scope="module")
def scifact(scifact_dir: Path) -> tuple[list[Document], list[str]]:
    """SciFact passages (title + text) and its first 100 queries."""
    with open(scifact_dir / "corpus.jsonl", encoding="utf-8") as f:
        corpus = [json.loads(line) for line in f]
    with open(scifact_dir / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for line in f][:100]
    return [Document(id=d["_id"], content=f"{d['title']} {d['text']}") for d in corpus], queries


def _hits(store: BM25DocumentStore, queries: list[str], n_threads: int = 0, **kwargs) -> list[list[tuple[str, float]]]:
    """(id, score) of the top 10 of every query."""
    found = BM25BatchRetriever(store, top_k=10, n_threads=n_threads, **kwargs).run(queries=queries)["documents"]
    return [[(d.id, d.score) for d in hits] for hits in found]


def _same_ranking(got: list[list[tuple[str, float]]], expected: list[list[tuple[str, float]]]) -> None:
    """Equal scores, query by query and rank by rank; ids equal too except the order within tied scores."""
    for got_hits, expected_hits in zip(got, expected, strict=True):
        assert [s for _, s in got_hits] == pytest.approx([s for _, s in expected_hits], rel=1e-6)
        assert {i: pytest.approx(s, rel=1e-6) for i, s in got_hits if s > got_hits[-1][1]} == {
            i: s for i, s in expected_hits if s > got_hits[-1][1]
        }


def test_the_default_backend_is_numba() -> None:
    """A store created without a backend, in code or from a pipeline dict without one, scores with numba."""
    store = BM25DocumentStore()
    assert store.backend == "numba"
    assert store.to_dict()["init_parameters"]["backend"] == "numba"
    data = {"type": "components.stores.bm25.document_store.BM25DocumentStore", "init_parameters": {}}
    assert BM25DocumentStore.from_dict(data).backend == "numba"
    with pytest.raises(ValueError, match="backend must be one of numpy, numba"):
        BM25DocumentStore(backend="jax")


@pytest.mark.integration
def test_numba_and_numpy_rank_and_score_scifact_alike_and_like_raw_bm25s(
    scifact: tuple[list[Document], list[str]],
) -> None:
    """Both backends, serial and parallel, with deletions and filters, give raw bm25s' top 10 and scores."""
    documents, queries = scifact
    numba_store, numpy_store = BM25DocumentStore(), BM25DocumentStore(backend="numpy")
    for store in (numba_store, numpy_store):
        store.write_documents(documents)
    stemmer = Stemmer.Stemmer("english")
    raw = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    raw.index(bm25s.tokenize([d.content for d in documents], stopwords="en", stemmer=stemmer, show_progress=False))
    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    rows, scores = raw.retrieve(tokens, k=10, show_progress=False)
    expected = [
        [(documents[r].id, float(s)) for r, s in zip(rr, ss, strict=True) if s > 0]
        for rr, ss in zip(rows, scores, strict=True)
    ]
    _same_ranking(_hits(numba_store, queries), expected)
    _same_ranking(_hits(numba_store, queries, n_threads=2), expected)
    _same_ranking(_hits(numpy_store, queries), expected)
    gone = [i for hits in expected[:5] for i, _ in hits[:2]]
    flt = {"field": "id", "operator": "not in", "value": [d.id for d in documents[::3]]}
    for store in (numba_store, numpy_store):
        store.delete_documents(gone)
    for n_threads in (0, 2):
        masked = _hits(numba_store, queries, n_threads, filters=flt)
        _same_ranking(masked, _hits(numpy_store, queries, filters=flt))
        assert not {i for hits in masked for i, _ in hits} & {*gone, *(d.id for d in documents[::3])}


def test_an_index_saved_with_numpy_opens_with_numba_and_back(tmp_path: Path) -> None:
    """The backend is not part of the saved index: one saved by a numpy store searches the same under numba."""
    documents = [
        Document(id=f"d{i}", content=f"comet {i + 10} tail dust ice orbit {'comet ' * (i % 4)}") for i in range(40)
    ]
    BM25DocumentStore(path=str(tmp_path / "idx"), backend="numpy").write_documents(documents)
    queries = ["comet tail", "ice orbit 17", "dust"]
    by_numpy = _hits(BM25DocumentStore(path=str(tmp_path / "idx"), backend="numpy"), queries)
    by_numba = _hits(BM25DocumentStore(path=str(tmp_path / "idx")), queries)
    _same_ranking(by_numba, by_numpy)
    assert by_numba[1][0][0] == "d7"


_SEARCH = textwrap.dedent(
    """
    import sys
    from haystack import Document
    from components.stores.bm25.document_store import BM25DocumentStore
    store = BM25DocumentStore()
    store.write_documents([Document(id=str(i), content=f"alpha beta {i} gamma " * (1 + i % 3)) for i in range(30)])
    store.warm_up()
    print(store.bm25_retrieval("gamma 17", top_k=1)[0].id)
    """
)


def _search_in_fresh_process(env: dict[str, str]) -> str:
    """Run a numba search in a new Python process with ``env`` added; its printed top hit."""
    done = subprocess.run(
        [sys.executable, "-c", _SEARCH],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.integration
def test_compiled_kernels_are_cached_on_disk_and_reused(tmp_path: Path) -> None:
    """The first process writes numba's cache into NUMBA_CACHE_DIR; a second one loads it instead of compiling."""
    cache = tmp_path / "numba-cache"
    assert _search_in_fresh_process({"NUMBA_CACHE_DIR": str(cache)}) == "17"
    files = {p: p.stat().st_mtime_ns for p in cache.rglob("kernels.*")}
    assert {p.suffix for p in files} == {".nbi", ".nbc"}
    assert _search_in_fresh_process({"NUMBA_CACHE_DIR": str(cache)}) == "17"
    assert {p: p.stat().st_mtime_ns for p in cache.rglob("kernels.*")} == files


@pytest.mark.integration
def test_search_works_when_no_cache_location_is_writable(tmp_path: Path) -> None:
    """With nowhere to write numba's cache (a cache dir under a file), kernels compile per process; search works."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    env = {"NUMBA_CACHE_DIR": str(blocker / "cache"), "NUMBA_CACHE_LOCATOR_CLASSES": "UserProvidedCacheLocator"}
    assert _search_in_fresh_process(env) == "17"
    assert [p.name for p in tmp_path.iterdir()] == ["not-a-directory"]
