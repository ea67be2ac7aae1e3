"""Incremental writes and deletes: found (or gone) at the next search, without rebuilding the whole index."""

import random

import bm25s
import numpy as np
import pytest
from haystack import Document

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.tokenizers import BM25Tokenizer

WORDS = [f"w{i}" for i in range(400)]


def synthetic_docs(n: int, seed: int, prefix: str) -> list[Document]:
    """Documents of 20-60 common words plus one marker word unique to each document."""
    rng = random.Random(seed)
    texts = [" ".join([*rng.choices(WORDS, k=rng.randint(20, 60)), f"marker{prefix}{i}"]) for i in range(n)]
    return [Document(id=f"{prefix}{i}", content=text) for i, text in enumerate(texts)]


def test_hundred_writes_and_deletes_are_searchable_without_a_full_rebuild() -> None:
    """Each write is found and each delete is gone at the next query; the big index is built once."""
    store = BM25DocumentStore(compaction_ratio=0.5)
    old = synthetic_docs(1000, seed=0, prefix="old")
    store.write_documents(old)
    assert store.bm25_retrieval("w1 w2")
    assert store.index_builds == 1
    for new, gone in zip(synthetic_docs(100, seed=1, prefix="new"), old[:100], strict=True):
        store.write_documents([new])
        assert store.bm25_retrieval(f"marker{new.id}", top_k=1)[0].id == new.id
        store.delete_documents([gone.id])
        assert store.bm25_retrieval(f"marker{gone.id}") == []
    assert store.index_builds == 1
    assert store.delta_builds >= 100
    assert store.count_documents() == 1000


def test_compaction_happens_once_changes_outgrow_the_ratio_and_keeps_every_document() -> None:
    """Past compaction_ratio the next search rebuilds once; everything live stays findable, nothing deleted returns."""
    store = BM25DocumentStore(compaction_ratio=0.1)
    old = synthetic_docs(500, seed=0, prefix="old")
    store.write_documents(old)
    store.bm25_retrieval("w1")
    store.delete_documents([d.id for d in old[:30]])
    new = synthetic_docs(30, seed=2, prefix="new")
    store.write_documents(new)
    assert store.bm25_retrieval("w1")
    assert store.index_builds == 2
    assert all(store.bm25_retrieval(f"marker{d.id}", top_k=1)[0].id == d.id for d in new + old[30:60])
    assert all(store.bm25_retrieval(f"marker{d.id}") == [] for d in old[:30])


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_delta_documents_score_like_raw_bm25s_over_the_whole_collection(method: str) -> None:
    """A document written after the build scores as raw bm25s would over main + delta; main ones as at build."""
    main, delta = synthetic_docs(300, seed=3, prefix="m"), synthetic_docs(40, seed=4, prefix="d")
    store = BM25DocumentStore(method=method, compaction_ratio=1.0)
    store.write_documents(main)
    store.bm25_retrieval("w1")
    store.write_documents(delta)
    tokenize = BM25Tokenizer("en")
    raw_all = _raw_scores(tokenize, main + delta, method)
    raw_main = _raw_scores(tokenize, main, method)
    query = "w5 w17 w17 w230"
    hits = store.bm25_retrieval(query, top_k=340)
    assert {d.id[0] for d in hits} == {"m", "d"}
    for hit in hits:
        expected = raw_all if hit.id.startswith("d") else raw_main
        assert hit.score == pytest.approx(expected(query)[hit.id], rel=1e-4)
    assert store.index_builds == 1


def _raw_scores(tokenize: BM25Tokenizer, docs: list[Document], method: str):
    """Scores of raw bm25s over ``docs`` with the store's default parameters, as {id: score} per query."""
    retriever = bm25s.BM25(method=method, k1=0.9, b=0.4, delta=0.5)
    retriever.index(tokenize([d.content for d in docs]), show_progress=False)
    return lambda query: dict(
        zip([d.id for d in docs], np.asarray(retriever.get_scores(tokenize([query])[0])), strict=True)
    )


def test_scores_after_compaction_equal_a_fresh_build_over_the_live_documents() -> None:
    """After compaction the index is exactly what raw bm25s builds over the live documents."""
    docs = synthetic_docs(200, seed=5, prefix="a")
    store = BM25DocumentStore(compaction_ratio=0.1)
    store.write_documents(docs)
    store.bm25_retrieval("w1")
    store.delete_documents([d.id for d in docs[:50]])
    hits = store.bm25_retrieval("w3 w9", top_k=200)
    assert store.index_builds == 2
    raw = _raw_scores(BM25Tokenizer("en"), docs[50:], "lucene")("w3 w9")
    assert {d.id: pytest.approx(d.score, rel=1e-5) for d in hits} == {i: s for i, s in raw.items() if s > 0}


def test_filters_never_bring_back_deleted_or_overwritten_documents() -> None:
    """A filter that matches a deleted document's metadata still does not return it."""
    store = BM25DocumentStore(compaction_ratio=1.0)
    store.write_documents([Document(id=str(i), content=f"comet tail {i}", meta={"k": i % 2}) for i in range(20)])
    store.bm25_retrieval("comet")
    store.delete_documents(["0", "2"])
    hits = store.bm25_retrieval("comet", filters={"field": "meta.k", "operator": "==", "value": 0}, top_k=20)
    assert sorted(int(d.id) for d in hits) == list(range(4, 20, 2))
