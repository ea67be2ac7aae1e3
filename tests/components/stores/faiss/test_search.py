"""FAISSDocumentStore.search: real FAISS indexes checked against a numpy brute force."""

import logging

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import MissingDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.stores import FAISSDocumentStore

DIM = 16
# search_params that make the approximate indexes exhaustive on these small corpora, so that their
# rankings can be compared with the brute force exactly.
EXHAUSTIVE = {"Flat": None, "HNSW32": {"efSearch": 512}, "IVF8,Flat": {"nprobe": 8}}


def corpus(n: int, seed: int = 0, groups: int = 10) -> tuple[np.ndarray, list[Document]]:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    docs = [
        Document(id=f"d{i}", content=f"document {i}", meta={"i": i, "group": i % groups}, embedding=vectors[i].tolist())
        for i in range(n)
    ]
    return vectors, docs


def brute_force(queries: np.ndarray, vectors: np.ndarray, metric: str) -> np.ndarray:
    """(Q, N) higher-is-better scores as the store documents them."""
    if metric == "l2":
        return -((queries[:, None, :] - vectors[None, :, :]) ** 2).sum(axis=-1)
    if metric == "cosine":
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return queries @ vectors.T


@pytest.mark.parametrize("factory", sorted(EXHAUSTIVE))
@pytest.mark.parametrize("metric", ["inner_product", "cosine", "l2"])
def test_ranking_and_scores_match_brute_force(factory: str, metric: str) -> None:
    vectors, docs = corpus(300)
    store = FAISSDocumentStore(metric=metric, index_factory=factory, search_params=EXHAUSTIVE[factory])
    store.write_documents(docs)
    queries = np.random.default_rng(1).standard_normal((4, DIM)).astype(np.float32)
    expected = brute_force(queries, vectors, metric)
    for query, hits in enumerate(store.search(queries, top_k=5)):
        best = np.argsort(-expected[query])[:5]
        assert [doc.meta["i"] for doc in hits] == best.tolist()
        np.testing.assert_allclose([doc.score for doc in hits], expected[query, best], rtol=1e-4, atol=1e-4)
        assert all(doc.meta["retrieval_type"] == "dense" for doc in hits)


def test_inner_product_is_the_default_metric() -> None:
    vectors, docs = corpus(50)
    store = FAISSDocumentStore()
    store.write_documents(docs)
    hit = store.search(vectors[:1] * 3, top_k=1)[0][0]
    assert hit.score == pytest.approx(float(vectors[0] @ vectors[0] * 3), rel=1e-5)


@pytest.mark.parametrize("factory", [*sorted(EXHAUSTIVE), "PQ4x4"])
def test_selective_filter_returns_exactly_top_k_matching_hits(factory: str) -> None:
    """20 of 2,000 documents match: every query still gets top_k hits, the exact best among the matching.

    Flat filters inside FAISS; HNSW and IVF (default efSearch / nprobe) find only some of the 20 and PQ takes
    no IDSelector at all: those queries are re-searched exactly over the matching documents' stored vectors.
    """
    vectors, docs = corpus(2000, groups=100)
    store = FAISSDocumentStore(index_factory=factory)  # default search params: approximate indexes miss hits
    store.write_documents(docs)
    queries = np.random.default_rng(2).standard_normal((3, DIM)).astype(np.float32)
    found = store.search(queries, top_k=10, filters={"field": "meta.group", "operator": "==", "value": 7})
    matching = np.arange(7, 2000, 100)
    scores = brute_force(queries, vectors[matching], "inner_product")
    for query, hits in enumerate(found):
        assert len(hits) == 10
        assert all(doc.meta["group"] == 7 for doc in hits)
        assert [doc.meta["i"] for doc in hits] == matching[np.argsort(-scores[query])[:10]].tolist()


def test_filter_matching_nothing_returns_empty_lists() -> None:
    _, docs = corpus(20)
    store = FAISSDocumentStore()
    store.write_documents(docs)
    assert store.search(np.ones((2, DIM), np.float32), 3, {"field": "meta.i", "operator": ">", "value": 99}) == [[], []]


def test_fewer_documents_than_top_k_gives_fewer_hits_and_no_placeholders() -> None:
    vectors, docs = corpus(3)
    store = FAISSDocumentStore()
    store.write_documents([*docs, Document(id="no-vector", content="stored without embedding")])
    hits = store.search(vectors[:1], top_k=10)[0]
    assert sorted(doc.id for doc in hits) == ["d0", "d1", "d2"]
    assert store.count_documents() == 4
    assert store.filter_documents({"field": "id", "operator": "==", "value": "no-vector"})[0].embedding is None


def test_ivf_searches_exactly_until_trained_then_trains_on_a_big_enough_write(tmp_path) -> None:
    import faiss

    vectors, docs = corpus(300)
    store = FAISSDocumentStore(path=str(tmp_path / "ivf"), index_factory="IVF8,Flat")
    store.write_documents(docs[:5])  # fewer vectors than the 8 lists: cannot train yet
    hits = store.search(vectors[:1], top_k=10)[0]
    assert len(hits) == 5
    assert hits[0].id == "d0"
    saved = lambda: faiss.read_index(str(next((tmp_path / "ivf").glob("gen-*")) / "vectors.faiss"))  # noqa: E731
    assert not saved().is_trained
    assert saved().ntotal == 0
    store.write_documents(docs[5:])
    assert saved().is_trained
    assert saved().ntotal == 300
    assert store.search(vectors[10:11], top_k=1)[0][0].id == "d10"


@pytest.mark.parametrize("factory", sorted(EXHAUSTIVE))
def test_deleted_documents_leave_search(factory: str) -> None:
    vectors, docs = corpus(300)
    store = FAISSDocumentStore(index_factory=factory, search_params=EXHAUSTIVE[factory])
    store.write_documents(docs)
    assert store.search(vectors[:1], top_k=1)[0][0].id == "d0"
    store.delete_documents(["d0"])
    hits = store.search(vectors[:1], top_k=300)[0]
    assert len(hits) == 299
    assert "d0" not in {doc.id for doc in hits}


def test_hnsw_rebuilds_once_deleted_vectors_outnumber_live_ones() -> None:
    """HNSW cannot delete: deleted vectors are excluded, then dropped by a rebuild; results stay exact."""
    vectors, docs = corpus(1500)
    store = FAISSDocumentStore(index_factory="HNSW32", search_params={"efSearch": 512})
    store.write_documents(docs)
    store.delete_documents([f"d{i}" for i in range(1200)])
    queries = vectors[:3]
    expected = brute_force(queries, vectors[1200:], "inner_product")
    for query, hits in enumerate(store.search(queries, top_k=5)):
        assert [doc.meta["i"] for doc in hits] == (1200 + np.argsort(-expected[query])[:5]).tolist()


def test_overwrite_replaces_the_vector() -> None:
    store = FAISSDocumentStore()
    store.write_documents([Document(id="a", content="a", embedding=[1.0, 0.0]), Document(id="b", embedding=[0.6, 0.6])])
    store.write_documents([Document(id="a", content="a2", embedding=[0.0, 1.0])], policy=DuplicatePolicy.OVERWRITE)
    best = store.search(np.array([[0.0, 1.0]], np.float32), 2)[0][0]
    assert (best.id, best.content) == ("a", "a2")
    assert store.search(np.array([[1.0, 0.0]], np.float32), 2)[0][0].id == "b"


def test_results_are_new_documents_and_inputs_are_untouched() -> None:
    vectors, docs = corpus(10)
    originals = [Document.from_dict(doc.to_dict()) for doc in docs]
    store = FAISSDocumentStore(metric="cosine")
    store.write_documents(docs)
    hit = store.search(vectors[:1], top_k=1)[0][0]
    hit.meta["group"] = "changed by the caller"
    assert docs == originals
    assert store.search(vectors[:1], top_k=1)[0][0].meta["group"] == 0


def test_return_embedding_gives_the_stored_original_not_the_normalised_vector() -> None:
    vectors, docs = corpus(10)
    store = FAISSDocumentStore(metric="cosine")
    store.write_documents(docs)
    assert store.search(vectors[:1], top_k=1)[0][0].embedding is None
    hit = store.search(vectors[:1], top_k=1, return_embedding=True)[0][0]
    assert hit.embedding == vectors[0].tolist()


def test_get_documents_by_id_keeps_order_and_names_missing_ids() -> None:
    _, docs = corpus(10)
    store = FAISSDocumentStore()
    store.write_documents(docs)
    assert [doc.id for doc in store.get_documents_by_id(["d7", "d2", "d7"])] == ["d7", "d2", "d7"]
    with pytest.raises(MissingDocumentError, match="nope"):
        store.get_documents_by_id(["d1", "nope"])


def test_write_embeddings_and_from_npy_match_write_documents(tmp_path) -> None:
    vectors, docs = corpus(120)
    plain = [Document(id=doc.id, content=doc.content, meta=doc.meta) for doc in docs]
    np.save(tmp_path / "emb.npy", vectors)
    by_lists, by_matrix, by_npy = FAISSDocumentStore(), FAISSDocumentStore(index_chunk_size=7), FAISSDocumentStore()
    by_lists.write_documents(docs)
    assert by_matrix.write_embeddings(plain, vectors) == 120
    assert by_npy.from_npy(plain, str(tmp_path / "emb.npy")) == 120
    queries = vectors[:5]
    expected = by_lists.search(queries, 5)
    assert by_matrix.search(queries, 5) == expected
    assert by_npy.search(queries, 5) == expected
    assert by_npy.filter_documents() == by_lists.filter_documents()


def test_bad_npy_files_are_named(tmp_path) -> None:
    vectors, docs = corpus(5)
    store = FAISSDocumentStore()
    np.save(tmp_path / "short.npy", vectors[:4])
    with pytest.raises(ValueError, match=r"short\.npy: 4 rows, expected one per document \(5\)"):
        store.from_npy(docs, str(tmp_path / "short.npy"))
    np.save(tmp_path / "ints.npy", np.ones((5, DIM), dtype=np.int32))
    with pytest.raises(ValueError, match=r"ints\.npy: expected a float32 \(N, dim\) array, got int32"):
        store.from_npy(docs, str(tmp_path / "ints.npy"))
    broken = vectors.copy()
    broken[3, 2] = np.nan
    np.save(tmp_path / "nan.npy", broken)
    with pytest.raises(ValueError, match=r"nan\.npy row 3: embedding holds NaN"):
        store.from_npy(docs, str(tmp_path / "nan.npy"))
    (tmp_path / "text.npy").write_text("not numpy")
    with pytest.raises(ValueError, match=r"text\.npy: not a readable \.npy"):
        store.from_npy(docs, str(tmp_path / "text.npy"))
    assert store.count_documents() == 0


def test_bad_documents_are_rejected_before_anything_is_written() -> None:
    store = FAISSDocumentStore(embedding_dim=3)
    with pytest.raises(ValueError, match=r"Document 'x' \(documents\[1\]\): embedding has 2 values.*embedding_dim=3"):
        store.write_documents([Document(id="ok", embedding=[1.0, 2.0, 3.0]), Document(id="x", embedding=[1.0, 2.0])])
    with pytest.raises(ValueError, match=r"Document 'y' \(documents\[0\]\): embedding holds NaN"):
        store.write_documents([Document(id="y", embedding=[1.0, float("nan"), 3.0])])
    with pytest.raises(ValueError, match=r"documents\[0\] \(id 'z'\): field 'meta.when' cannot be stored"):
        store.write_documents([Document(id="z", meta={"when": object()})])
    assert store.count_documents() == 0


def test_bad_queries_are_rejected() -> None:
    _, docs = corpus(5)
    store = FAISSDocumentStore()
    store.write_documents(docs)
    with pytest.raises(ValueError, match="embedding_dim=16"):
        store.search(np.ones((1, 8), np.float32), 3)
    with pytest.raises(ValueError, match=r"query_embeddings\[1\]: embedding holds NaN"):
        store.search(np.array([[0.0] * DIM, [np.nan] * DIM], np.float32), 3)
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 10000\], got 0"):
        store.search(np.ones((1, DIM), np.float32), 0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"metric": "dot"}, "metric must be one of inner_product, cosine, l2"),
        ({"index_factory": "Flatt"}, "index_factory='Flatt'"),
        ({"index_factory": "IDMap2,Flat"}, "without IDMap"),
        ({"index_factory": "IVF16,Flat,RFlat"}, "this FAISS index cannot store ids"),
        ({"embedding_dim": 0}, "embedding_dim must be an integer >= 1"),
        ({"index_chunk_size": 0}, "index_chunk_size must be an integer >= 1"),
        ({"index_factory": "Flat", "search_params": {"nprobe": 4}}, "search_params"),
    ],
)
def test_bad_init_parameters_fail_at_init(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FAISSDocumentStore(**params)


def test_gpu_request_falls_back_to_cpu_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    import faiss

    if faiss.get_num_gpus() > 0:
        pytest.skip("a GPU is visible: there is no fallback to observe")
    vectors, docs = corpus(20)
    store = FAISSDocumentStore(index_use_gpu=True)
    with caplog.at_level(logging.WARNING):
        store.write_documents(docs)
    assert "index_use_gpu=True but faiss sees no GPU" in caplog.text
    assert store.search(vectors[:1], 1)[0][0].id == "d0"
