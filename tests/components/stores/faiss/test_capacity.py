"""Room reserved for a bulk write's vectors (``reserve``) changes no answer: the stored vectors are kept, the writes
that follow land in the room (the array is not moved again), and every index type answers as it does without it."""

from pathlib import Path

import faiss
import numpy as np
import pytest

from components.stores.faiss.capacity import reserve_codes
from components.stores.faiss.document_store import FAISSDocumentStore
from components.stores.faiss.vector_index import build_faiss_index

DIM = 16


def matrix(count: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)


def codes_address(index: faiss.Index) -> int:
    """Where the Flat index under INDEX's id map keeps its vectors."""
    inner = faiss.downcast_index(faiss.downcast_index(index).index)
    return int(inner.codes.data())


def test_reserved_room_keeps_the_stored_vectors_and_takes_the_next_adds_in_place() -> None:
    index = build_faiss_index(DIM, "inner_product", "Flat", None)
    first, rest = matrix(10), matrix(1000, seed=4)
    index.add_with_ids(first, np.arange(10))
    assert reserve_codes(index, len(rest))
    address = codes_address(index)
    for start in range(0, len(rest), 100):
        index.add_with_ids(rest[start : start + 100], np.arange(10 + start, 10 + start + 100))
    assert codes_address(index) == address  # never moved: the adds wrote into the reserved room
    assert np.array_equal(index.reconstruct_batch(np.arange(1010)), np.vstack([first, rest]))


KINDS = [("Flat", True), ("SQ8", True), ("HNSW8", True), ("IVF4,Flat", False)]  # IVF: lists of unknown sizes


@pytest.mark.parametrize(("factory", "reserves"), KINDS)
def test_every_index_type_answers_as_without_it(tmp_path: Path, factory: str, reserves: bool) -> None:
    vectors, queries = matrix(400), matrix(5, seed=9)
    found = []
    for reserved in (False, True):
        store = FAISSDocumentStore(path=str(tmp_path / f"{factory}-{reserved}"), index_factory=factory, autosave=False)
        if store.needs_training(DIM):
            store.train(vectors)
        if reserved:
            store.reserve(len(vectors), DIM)
        for start in range(0, len(vectors), 100):
            ids = [f"d{row}" for row in range(start, start + 100)]
            store.write_fields(ids, ["text"] * 100, [{}] * 100, vectors[start : start + 100])
        found.append([[(hit.id, hit.score) for hit in hits] for hits in store.search(queries, 10)])
    assert found[0] == found[1]
    assert reserve_codes(build_faiss_index(DIM, "inner_product", factory, None), 1) is reserves


def test_a_store_without_an_index_keeps_no_dimension_and_room_it_cannot_get_is_skipped(tmp_path: Path) -> None:
    store = FAISSDocumentStore(path=str(tmp_path / "s"), autosave=False)
    store.reserve(10, 8)  # no index yet: nothing to reserve, and the dimension stays open
    assert store.embedding_dim is None
    store.write_fields(["a"], ["x"], [{}], matrix(1))
    store.reserve(2**60, DIM)  # more than any system gives: skipped, the store as it was
    store.reserve(np.int64(100), DIM)
    store.write_fields(["b"], ["y"], [{}], matrix(1, seed=8))
    assert [hit.id for hit in store.search(matrix(1, seed=8), 2)[0]] == ["b", "a"]


def test_a_bad_count_or_dimension_is_refused(tmp_path: Path) -> None:
    store = FAISSDocumentStore(path=str(tmp_path / "s"), autosave=False)
    store.write_fields(["a"], ["x"], [{}], matrix(1))
    with pytest.raises(ValueError, match=r"count must be an integer >= 0, got -1"):
        store.reserve(-1, DIM)
    with pytest.raises(ValueError, match=r"count must be an integer >= 0, got 2.5"):
        store.reserve(2.5, DIM)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"vectors of size 8, this store holds size 16"):
        store.reserve(10, 8)
    assert store.count_documents() == 1
