"""FAISSDocumentStore with the compressed index types of ``needle index --index-type`` (real FAISS, synthetic
clustered unit vectors): each builds, searches close to exact, survives save / load and to_dict / from_dict, takes
nprobe / efSearch at search time, and a tampered IVF index naming rows the store never handed out is refused."""

from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores import FAISSDocumentStore
from needle_retrieval.index.dense_type import DenseIndexType
from tests.support.integrity import live, reseal

DIM, N, QUERIES = 32, 3000, 100
TYPES = {
    "sq8": DenseIndexType("sq8"),
    "hnsw-sq8": DenseIndexType("hnsw-sq8", hnsw_m=16, ef_construction=40, ef_search=64),
    "ivf-flat": DenseIndexType("ivf-flat", nlist=32, nprobe=8),
    "ivf-sq8": DenseIndexType("ivf-sq8", nlist=32, nprobe=8),
    "ivf-pq": DenseIndexType("ivf-pq", nlist=32, nprobe=8, pq_m=8),
}
# recall@10 against exact search on this set; measured 0.95-1.0 for all but ivf-pq (0.65 with 4 dims per byte)
FLOORS = {"sq8": 0.9, "hnsw-sq8": 0.85, "ivf-flat": 0.85, "ivf-sq8": 0.85, "ivf-pq": 0.5}


def clustered(count: int, seed: int) -> np.ndarray:
    """Unit vectors around 30 fixed centres (noise of norm ~0.6), as sentence embeddings cluster."""
    centres = np.random.default_rng(99).standard_normal((30, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    points = centres[rng.integers(0, 30, count)] + rng.standard_normal((count, DIM)).astype(np.float32) * 0.1
    unit: np.ndarray = (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)
    return unit


VECTORS, ASKED = clustered(N, 0), clustered(QUERIES, 1)
EXACT = np.argsort(-(ASKED @ VECTORS.T), axis=1)[:, :10]
DOCUMENTS = [Document(id=f"d{i}", content=f"document {i}") for i in range(N)]


def recall(store: FAISSDocumentStore) -> float:
    found = [[int(doc.id[1:]) for doc in hits] for hits in store.search(ASKED, top_k=10)]
    return float(np.mean([len(set(f) & set(e)) / 10 for f, e in zip(found, EXACT.tolist(), strict=True)]))


@pytest.fixture(autouse=True)
def one_faiss_thread() -> Iterator[None]:
    """PQ training on one thread: OpenMP's hand-offs make it several times slower on a busy 2-core machine."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(threads)


def build(tmp_path: Path, kind: str) -> FAISSDocumentStore:
    choice = TYPES[kind]
    path = str(tmp_path / kind)
    store = FAISSDocumentStore(path=path, index_factory=choice.factory(), search_params=choice.search_params())
    store.write_embeddings(DOCUMENTS, VECTORS)
    return store


def saved_index(path: Path) -> faiss.Index:
    return faiss.read_index(str(live(path) / "vectors.faiss"))


def code_size(index: faiss.Index) -> int:
    """Bytes per stored vector of the saved index (unwrapped from its id map and HNSW graph)."""
    inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexIDMap2) else index
    if isinstance(inner, faiss.IndexHNSW):
        inner = faiss.downcast_index(inner.storage)
    return int(inner.code_size)  # type: ignore[attr-defined]  # faiss stubs: code_size is on the subclasses


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_each_type_builds_compressed_and_finds_the_exact_neighbours(tmp_path: Path, kind: str) -> None:
    store = build(tmp_path, kind)
    assert recall(store) >= FLOORS[kind]
    assert (
        code_size(saved_index(tmp_path / kind))
        == {"sq8": DIM, "hnsw-sq8": DIM, "ivf-flat": DIM * 4, "ivf-sq8": DIM, "ivf-pq": 8}[kind]
    )
    if kind in ("sq8", "ivf-sq8", "ivf-pq"):  # the file shrinks with the codes (not HNSW's graph, IVF-Flat's floats)
        assert (live(tmp_path / kind) / "vectors.faiss").stat().st_size < N * DIM * 4 * 0.35  # + 8-byte ids
    reopened = FAISSDocumentStore.load(str(tmp_path / kind))
    assert reopened.index_factory == TYPES[kind].factory()
    assert recall(reopened) == recall(store)
    assert FAISSDocumentStore.from_dict(store.to_dict()).to_dict() == store.to_dict()


@pytest.mark.parametrize(("kind", "narrow", "wide"), [("ivf-flat", {"nprobe": 1}, {"nprobe": 32}),
                                                       ("hnsw-sq8", {"efSearch": 10}, {"efSearch": 256})])  # fmt: skip
def test_search_time_settings_change_recall_without_a_rebuild(
    tmp_path: Path, kind: str, narrow: dict[str, int], wide: dict[str, int]
) -> None:
    build(tmp_path, kind)
    path, generation = str(tmp_path / kind), live(tmp_path / kind)
    low = recall(FAISSDocumentStore.load(path, search_params=narrow))
    high = recall(FAISSDocumentStore.load(path, search_params=wide))
    assert low < high
    assert high >= 0.95
    assert live(tmp_path / kind) == generation  # searched, never rebuilt


def test_sq8_deletes_leave_search(tmp_path: Path) -> None:
    store = build(tmp_path, "sq8")
    store.delete_documents(["d0", "d1"])
    reopened = FAISSDocumentStore.load(str(tmp_path / "sq8"))
    assert reopened.search(VECTORS[2:3], top_k=1)[0][0].id == "d2"
    assert not {doc.id for doc in reopened.search(VECTORS[:2], top_k=20)[0]} & {"d0", "d1"}


def test_a_tampered_ivf_index_naming_unknown_rows_is_refused(tmp_path: Path) -> None:
    build(tmp_path, "ivf-flat")
    file = live(tmp_path / "ivf-flat") / "vectors.faiss"
    index = faiss.read_index(str(file))
    index.add_with_ids(VECTORS[:1], np.array([10**9], dtype=np.int64))  # a row no document has
    index.remove_ids(faiss.IDSelectorBatch(np.array([5], dtype=np.int64)))  # same count as the manifest says
    faiss.write_index(index, str(file))
    reseal(file)
    with pytest.raises(DocumentStoreError, match=r"vectors.faiss: corrupted, its ids must be distinct rows in"):
        FAISSDocumentStore.load(str(tmp_path / "ivf-flat")).search(ASKED[:1], top_k=3)
