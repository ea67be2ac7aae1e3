"""The fast paths of a BM25 (and FAISS) search give the answers of the plain ones.

- the numba kernel's large-``k`` selection (a score threshold, then a partial sort) ranks exactly as bm25s' own
  numpy scorer, with deletions and filters, serially and on threads, ties by row;
- ``hit_documents`` builds the Documents ``hit`` builds, each with its own meta;
- ``collector_paused`` lets no garbage collection walk the hits of a batch, and leaves the collector as it found
  it (on, off, or with objects frozen by the program), also when the block fails.
"""

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.kernels import HEAP_K
from components.stores.faiss.document_store import FAISSDocumentStore
from components.stores.hits import collector_paused, hit, hit_documents

Hits = list[tuple[str, float | None]]


@pytest.fixture(scope="module")
def scifact(scifact_dir: Path) -> tuple[list[Document], list[str]]:
    """SciFact passages and 80 of its queries: long queries, whose postings reach most rows (a dense scan)."""
    with open(scifact_dir / "corpus.jsonl", encoding="utf-8") as lines:
        documents = [
            Document(id=r["_id"], content=f"{r['title']} {r['text']}", meta={"n": i % 3})
            for i, r in enumerate(map(json.loads, lines))
        ]
    with open(scifact_dir / "queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for _, line in zip(range(80), lines, strict=False)]
    return documents, queries


def ranked(store: BM25DocumentStore, queries: list[str], k: int, n_threads: int = 0, **kw: object) -> list[Hits]:
    """(id, score) of each query's hits, in order."""
    hits = store.bm25_retrieval_batch(queries, top_k=k, n_threads=n_threads, **kw)  # type: ignore[arg-type]
    return [[(d.id, d.score) for d in found] for found in hits]


def direct(store: BM25DocumentStore, queries: list[str], k: int, accept: np.ndarray | None = None) -> list[Hits]:
    """The best ``k`` (id, score) per query computed with numpy over the index's own weights: each row's weights
    summed in float32 term by term (as the kernel sums them), rows of the live (and accepted) documents ranked by
    score, equal scores by row."""
    snapshot = store._ready().snapshot()
    main = snapshot.main
    assert main is not None
    assert snapshot.delta is None
    data, indices, indptr = (np.asarray(main.bm25.scores[key]) for key in ("data", "indices", "indptr"))
    keep = snapshot.alive if accept is None else snapshot.alive & accept
    answers = []
    for terms in store._tokenizer_ready()(queries):
        scores = np.zeros(main.n_docs, dtype=np.float32)
        for term in (snapshot.vocab[t] for t in terms if t in snapshot.vocab):
            np.add.at(scores, indices[indptr[term] : indptr[term + 1]], data[indptr[term] : indptr[term + 1]])
        rows = np.flatnonzero((scores > 0) & keep)
        best = rows[np.lexsort((rows, -scores[rows]))][:k]
        hits: Hits = [(main.ids[row], float(scores[row])) for row in best]
        answers.append(hits)
    return answers


@pytest.mark.parametrize("k", [HEAP_K + 1, 100, 1000])
def test_large_k_selection_ranks_exactly_as_a_direct_computation(
    scifact: tuple[list[Document], list[str]], k: int
) -> None:
    documents, queries = scifact
    store = BM25DocumentStore()
    store.write_documents(documents)
    expected = direct(store, queries, k)
    assert sum(map(len, expected)) > 0.9 * k * len(queries)  # most queries fill their k: the selection is exercised
    assert ranked(store, queries, k) == expected
    assert ranked(store, queries, k, n_threads=2) == expected
    store.delete_documents([doc_id for hits in expected[:10] for doc_id, _ in hits[:3]])
    flt = {"field": "meta.n", "operator": "!=", "value": 1}
    accept = np.array([i % 3 != 1 for i in range(len(documents))])
    assert ranked(store, queries, k, filters=flt) == direct(store, queries, k, accept)
    assert ranked(store, queries, k, n_threads=2, filters=flt) == direct(store, queries, k, accept)


def test_equal_scores_come_in_write_order_at_every_k() -> None:
    """400 identical passages score alike: the first written come first, whatever the selection path."""
    same = [Document(id=f"same-{i:03d}", content="alpha beta gamma") for i in range(400)]
    store = BM25DocumentStore()
    store.write_documents([*same, *(Document(id=f"other-{i}", content=f"delta {i}") for i in range(100))])
    for k in (5, HEAP_K + 1, 100, 450):
        assert [d.id for d in store.bm25_retrieval("alpha", top_k=k)] == [d.id for d in same[:k]]


def test_hit_documents_are_the_documents_hit_builds_each_with_its_own_meta() -> None:
    stored = [Document(id="a", content="alpha", meta={"x": 1}), Document(id="b", content="beta", embedding=[0.5])]
    built = hit_documents(stored, [2.0, 1.0], "sparse")
    assert built == [hit(stored[0], 2.0, "sparse"), hit(stored[1], 1.0, "sparse")]
    built[0].meta["x"] = 99
    assert stored[0].meta == {"x": 1}
    assert stored[0].score is None
    with pytest.raises(ValueError, match="shorter"):
        hit_documents(stored, [1.0], "sparse")


def test_faiss_hits_keep_their_embeddings_and_scores() -> None:
    store = FAISSDocumentStore(embedding_dim=2, metric="inner_product")
    store.write_documents([Document(id=n, content=n, embedding=[1.0, float(i)]) for i, n in enumerate("abc")])
    hits = store.search(np.array([[0.0, 1.0]], dtype=np.float32), top_k=2, return_embedding=True)[0]
    assert [(d.id, d.score, d.embedding, d.meta["retrieval_type"]) for d in hits] == [
        ("c", 2.0, [1.0, 2.0], "dense"),
        ("b", 1.0, [1.0, 1.0], "dense"),
    ]


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations collected while the test runs (a gc callback), with the collector on to begin with."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    was = gc.isenabled()
    gc.enable()
    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)
        gc.enable() if was else gc.disable()


def test_no_collection_walks_the_hits_of_a_batch(collections: list[int]) -> None:
    """Building 30,000 hits (60,000 tracked objects) inside the block, and allocating after it, collects nothing:
    switching the collector off alone would run one, over every hit, the moment it is back on."""
    stored = [Document(id=str(i), content="text", meta={"i": i}) for i in range(300)]
    with collector_paused():
        hits = [hit_documents(stored, [1.0] * 300, "sparse") for _ in range(100)]
    after: list[list[int]] = [[] for _ in range(100)]
    assert collections == []
    assert len(hits) == len(after) == 100
    assert gc.isenabled()


def test_the_collector_is_left_as_found_also_when_the_block_fails(collections: list[int]) -> None:
    for enabled in (True, False):
        gc.enable() if enabled else gc.disable()
        with pytest.raises(RuntimeError, match="inside"), collector_paused():
            raise RuntimeError("a failure inside the block")
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() == 0


def test_objects_the_program_froze_stay_frozen(collections: list[int]) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            made = [{"n": i} for i in range(1000)]
        # An unfreeze would empty the permanent generation; a few frozen objects may be freed meanwhile by a thread
        # of an earlier test (seen under load), so the count may drop a little, never to half.
        assert gc.get_freeze_count() > frozen // 2
        assert gc.isenabled()
        assert len(made) == 1000
    finally:
        gc.unfreeze()
