"""A Flat store keeps each vector once, in its FAISS index, not a second time in its document table; a store built
in place links its table into the generation. Old generations (a blob per embedding) open and answer the same."""

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError
from haystack.document_stores.types import DuplicatePolicy

from components.stores.faiss.document_store import FAISSDocumentStore
from tests.support.integrity import live, reseal

DIM = 8


def corpus(count: int, seed: int = 0) -> list[Document]:
    """COUNT documents with float32 embeddings that are not round numbers, every fifth without one."""
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return [
        Document(id=f"d{i}", content=f"text {i}", meta={"n": i}, embedding=None if i % 5 == 4 else vectors[i].tolist())
        for i in range(count)
    ]


def blob_sizes(store_path: Path) -> list[int | None]:
    """The size of each stored embedding blob of the live generation, by row (None: no embedding)."""
    with sqlite3.connect(live(store_path) / "documents.sqlite") as db:
        return [size for (size,) in db.execute("SELECT length(embedding) FROM documents ORDER BY row")]


def answers(store: FAISSDocumentStore) -> tuple[list[Document], list[Document], list[list[Document]]]:
    """What a user reads back: every document with its embedding, two by id, and a search with embeddings."""
    query = np.random.default_rng(9).standard_normal((2, DIM)).astype(np.float32)
    return (
        store.filter_documents(),
        store.get_documents_by_id(["d3", "d0"], return_embedding=True),
        store.search(query, top_k=5, return_embedding=True),
    )


def test_a_flat_store_returns_each_embedding_exactly_from_its_index_alone(tmp_path: Path) -> None:
    documents = corpus(40)
    FAISSDocumentStore(path=str(tmp_path)).write_documents(documents)
    assert set(blob_sizes(tmp_path)) == {0, None}  # no float of any vector in the table
    store = FAISSDocumentStore(path=str(tmp_path))
    found, by_id, _ = answers(store)
    assert [d.embedding for d in found] == [d.embedding for d in documents]
    assert [d.embedding for d in by_id] == [documents[3].embedding, documents[0].embedding]
    store.delete_documents(["d0", "d1"])
    store.write_documents([Document(id="d2", content="new", embedding=[0.5] * DIM)], policy=DuplicatePolicy.OVERWRITE)
    again = FAISSDocumentStore(path=str(tmp_path))
    assert [d.embedding for d in again.filter_documents({"field": "id", "operator": "==", "value": "d2"})] == [
        [0.5] * DIM
    ]
    assert (
        again.filter_documents({"field": "meta.n", "operator": "==", "value": 7})[0].embedding == documents[7].embedding
    )


@pytest.mark.parametrize(("metric", "factory"), [("cosine", "Flat"), ("inner_product", "HNSW32")])
def test_an_index_that_changes_or_approximates_vectors_keeps_them_in_the_table(
    tmp_path: Path, metric: str, factory: str
) -> None:
    documents = corpus(30)
    store = FAISSDocumentStore(path=str(tmp_path), metric=metric, index_factory=factory)
    store.write_documents(documents)
    assert set(blob_sizes(tmp_path)) == {4 * DIM, None}
    assert [d.embedding for d in FAISSDocumentStore.load(str(tmp_path)).filter_documents()] == [
        d.embedding for d in documents
    ]


def test_a_generation_saved_with_a_blob_per_embedding_opens_and_answers_the_same(tmp_path: Path) -> None:
    """The table format of earlier versions: each embedding's float32 bytes in the table too."""
    documents = corpus(40)
    new, old = tmp_path / "new", tmp_path / "old"
    for path in (new, old):
        FAISSDocumentStore(path=str(path)).write_documents(documents)
    table = live(old) / "documents.sqlite"
    with sqlite3.connect(table) as db:
        for document in documents:
            blob = None if document.embedding is None else np.asarray(document.embedding, "<f4").tobytes()
            db.execute("UPDATE documents SET embedding = ? WHERE id = ?", (blob, document.id))
    reseal(table)
    assert set(blob_sizes(old)) == {4 * DIM, None}
    assert answers(FAISSDocumentStore(path=str(old))) == answers(FAISSDocumentStore(path=str(new)))
    store = FAISSDocumentStore(path=str(old))  # and it goes on being written: new rows keep their vectors once
    store.delete_documents(["d3"])
    store.write_documents([Document(id="x", content="x", embedding=[0.25] * DIM)])
    assert blob_sizes(old)[-1] == 0
    assert FAISSDocumentStore(path=str(old)).get_documents_by_id(["x", "d0"], return_embedding=True)[1].embedding == (
        documents[0].embedding
    )


def test_a_table_that_names_vectors_an_index_does_not_keep_is_refused(tmp_path: Path) -> None:
    """A row whose embedding is said to be the index's, where the index is approximate or lacks it."""
    hnsw, flat = tmp_path / "hnsw", tmp_path / "flat"
    FAISSDocumentStore(path=str(hnsw), index_factory="HNSW32").write_documents(corpus(20))
    FAISSDocumentStore(path=str(flat)).write_documents(corpus(20))
    for path, row in ((hnsw, 0), (flat, 4)):  # row 4 of the Flat store has no embedding, so no vector
        table = live(path) / "documents.sqlite"
        with sqlite3.connect(table) as db:
            db.execute("UPDATE documents SET embedding = x'' WHERE row = ?", (row,))
            if path == flat:  # and row 0's is gone: as many embedded rows as vectors, but not the same rows
                db.execute("UPDATE documents SET embedding = NULL WHERE row = 0")
        reseal(table)
    with pytest.raises(DocumentStoreError, match=r"documents\.sqlite: corrupted, row 0 holds an embedding of another"):
        FAISSDocumentStore.load(str(hnsw)).count_documents()
    with pytest.raises(DocumentStoreError, match=r"documents\.sqlite: corrupted, its rows with an embedding are not"):
        FAISSDocumentStore(path=str(flat)).count_documents()


def test_a_store_built_in_place_saves_its_table_where_it_lies_and_goes_on(tmp_path: Path) -> None:
    """``write_in_place``: no copy of the table, nothing left beside the generation, the store still usable."""
    documents = corpus(60)
    store = FAISSDocumentStore(path=str(tmp_path / "dense"), autosave=False)
    store.write_in_place()
    store.write_documents(documents[:30])
    store.write_documents(documents[30:])
    store.save()
    assert sorted(p.name for p in (tmp_path / "dense").iterdir()) == ["CURRENT", "LOCK", "gen-00000001"]
    reopened = FAISSDocumentStore(path=str(tmp_path / "dense"))
    assert answers(reopened) == answers(store)
    store.delete_documents(["d0"])  # the saved generation never changes: the next save is a new one
    store.save()
    assert reopened.count_documents() == 60
    assert FAISSDocumentStore(path=str(tmp_path / "dense")).count_documents() == 59


@pytest.mark.parametrize("inner", ["sq4", "lsh", "ivf"])
def test_a_flat_store_whose_vectors_file_holds_another_index_is_refused(tmp_path: Path, inner: str) -> None:
    """Its embeddings are read from the index: an attacker's lossy index under the same ids must not answer."""
    import faiss

    vectors = np.random.default_rng(0).standard_normal((20, 8)).astype(np.float32)
    documents = [Document(id=f"d{i}", content=f"t{i}", embedding=vectors[i].tolist()) for i in range(20)]
    FAISSDocumentStore(path=str(tmp_path)).write_documents(documents)
    path = live(tmp_path) / "vectors.faiss"
    ids = faiss.vector_to_array(faiss.read_index(str(path)).id_map)
    if inner == "sq4":
        index: faiss.Index = faiss.IndexScalarQuantizer(8, faiss.ScalarQuantizer.QT_4bit, faiss.METRIC_INNER_PRODUCT)
    elif inner == "lsh":
        index = faiss.IndexLSH(8, 16)
        index.metric_type = faiss.METRIC_INNER_PRODUCT
    else:
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(8), 8, 2, faiss.METRIC_INNER_PRODUCT)
    index.train(vectors)
    swapped = faiss.IndexIDMap2(index)
    swapped.add_with_ids(vectors, ids)
    faiss.write_index(swapped, str(path))
    reseal(path)
    with pytest.raises(DocumentStoreError, match="corrupted"):
        FAISSDocumentStore(path=str(tmp_path)).filter_documents()
