"""The learned sparse field of a Milvus collection (``learned_sparse_field_name``) on Milvus Lite.

Documents with hand-written ``SparseEmbedding``s (no model) are written once for the module. Sparse search ranks
by the dot product of the weights, checked against numpy; filters (a tenant too) apply inside Milvus; the
embeddings read back as written. A document or query Milvus cannot take is one ValueError naming it and the
field, and nothing is written, checked on the weights as float32 (as Milvus stores them) and for every chunk of the
write before the first; a collection without the field (or with another, or whose BM25 field the setting names) is
refused naming the setting.
"""

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from haystack import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from components.stores.milvus import MilvusCollectionError, MilvusDocumentStore
from tests.support.milvus import corpus, ids

VOCABULARY = 40
FIELD = "splade"


def sparse_corpus(n: int = 24, seed: int = 1) -> list[Document]:
    """The shared corpus, each document with 2 to 6 random terms of VOCABULARY, float32 weights in (0.1, 2) (Milvus
    stores float32), tenants a and b."""
    rng = np.random.default_rng(seed)
    documents = []
    for position, document in enumerate(corpus(n)):
        terms = sorted(rng.choice(VOCABULARY, size=int(rng.integers(2, 7)), replace=False).tolist())
        weights = rng.uniform(0.1, 2.0, size=len(terms)).astype(np.float32).tolist()
        sparse = SparseEmbedding(indices=terms, values=weights)
        meta = {**document.meta, "tenant": "ab"[position % 2]}
        documents.append(dataclasses.replace(document, sparse_embedding=sparse, meta=meta))
    return documents


def dense_rows(documents: list[Document]) -> np.ndarray:
    matrix = np.zeros((len(documents), VOCABULARY))
    for row, document in enumerate(documents):
        assert document.sparse_embedding is not None
        matrix[row, document.sparse_embedding.indices] = document.sparse_embedding.values
    return matrix


QUERIES = [
    SparseEmbedding(indices=[1, 5, 9, 20], values=[1.0, 0.5, 2.0, 0.25]),
    SparseEmbedding(indices=[0, 33], values=[0.7, 1.3]),
    SparseEmbedding(indices=[12, 17, 38, 39], values=[0.2, 0.9, 1.1, 0.4]),
]


def reference(documents: list[Document], query: SparseEmbedding, top_k: int) -> list[tuple[str, float]]:
    """(id, dot product) of the documents sharing a term with QUERY, best first, at most TOP_K."""
    vector = np.zeros(VOCABULARY)
    vector[query.indices] = query.values
    scores = dense_rows(documents) @ vector
    order = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > 0]
    return [(documents[i].id, float(scores[i])) for i in order[:top_k]]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("learned-sparse") / "m.db")


@pytest.fixture(scope="module")
def store(db: str) -> Iterator[MilvusDocumentStore]:
    store = MilvusDocumentStore(uri=db, collection_name="learned", learned_sparse_field_name=FIELD)
    assert store.write_documents(sparse_corpus()) == 24
    yield store
    store.close()


@pytest.mark.parametrize("top_k", [3, 50])
def test_sparse_search_ranks_by_the_dot_product_of_the_weights(store: MilvusDocumentStore, top_k: int) -> None:
    found = store.sparse_embedding_search(QUERIES, top_k)
    for hits, query in zip(found, QUERIES, strict=True):
        expected = reference(sparse_corpus(), query, top_k)
        assert ids(hits) == [doc_id for doc_id, _ in expected]
        assert [h.score for h in hits] == pytest.approx([score for _, score in expected], rel=1e-5)
        assert all(h.meta["retrieval_type"] == "sparse" for h in hits)


def test_sparse_search_applies_filters_inside_milvus(store: MilvusDocumentStore) -> None:
    tenant_b = {"field": "meta.tenant", "operator": "==", "value": "b"}
    documents = [d for d in sparse_corpus() if d.meta["tenant"] == "b"]
    hits = store.sparse_embedding_search(QUERIES[:1], 50, tenant_b)[0]
    assert ids(hits) == [doc_id for doc_id, _ in reference(documents, QUERIES[0], 50)]


def test_a_query_without_weight_matches_nothing_and_a_bad_query_is_named(store: MilvusDocumentStore) -> None:
    assert store.sparse_embedding_search([SparseEmbedding(indices=[], values=[])], 5) == [[]]
    assert store.sparse_embedding_search([], 5) == []
    bad = SparseEmbedding(indices=[3], values=[float("nan")])
    with pytest.raises(
        ValueError, match=rf"query_sparse_embeddings\[1\]: its sparse_embedding \(Milvus field '{FIELD}'"
    ):
        store.sparse_embedding_search([QUERIES[0], bad], 5)


def test_documents_read_back_with_their_sparse_embeddings(store: MilvusDocumentStore) -> None:
    written = {document.id: document for document in sparse_corpus()}
    read = store.filter_documents()
    assert len(read) == 24
    for document in read:
        assert document.sparse_embedding == written[document.id].sparse_embedding
        assert FIELD not in document.meta
    assert store.get_documents_by_id(["d03"])[0].sparse_embedding == written["d03"].sparse_embedding


@pytest.mark.parametrize(
    ("sparse", "problem"),
    [
        (None, "must be a haystack SparseEmbedding, got NoneType"),
        (SparseEmbedding(indices=[1, 2], values=[1.0, -0.5]), "has weight -0.5 at term id 2"),
        (SparseEmbedding(indices=[1], values=[float("nan")]), "has weight nan at term id 1"),
        (SparseEmbedding(indices=[2**32], values=[1.0]), r"has term id 4294967296; Milvus takes integers in \[0,"),
        (SparseEmbedding(indices=[-1], values=[1.0]), "has term id -1"),
        (SparseEmbedding(indices=[4, 4], values=[1.0, 1.0]), "repeats term id 4"),
        (SparseEmbedding(indices=[4], values=[0.0]), "has no non-zero weight"),
        (SparseEmbedding(indices=[4, 5], values=[1e-50, 0.0]), "has no non-zero weight in float32"),
        (SparseEmbedding(indices=[4], values=[3.5e38]), "has weight 3.5e[+]38 at term id 4"),
        (SparseEmbedding(indices=[4], values=[-1e-50]), "has weight -1e-50 at term id 4"),
    ],
    ids=[
        "missing",
        "negative",
        "nan",
        "too-large-id",
        "negative-id",
        "repeated",
        "all-zero",
        "zero-in-float32",
        "infinite-in-float32",
        "tiny-negative",
    ],
)
def test_a_document_milvus_cannot_store_is_named_with_the_field_and_nothing_is_written(
    store: MilvusDocumentStore, sparse: SparseEmbedding | None, problem: str
) -> None:
    good = Document(id="new-good", content="alpha", sparse_embedding=SparseEmbedding(indices=[1], values=[1.0]))
    bad = Document(id="new-bad", content="beta", sparse_embedding=sparse)
    with pytest.raises(ValueError, match=rf"documents\[1\] \(id 'new-bad'\): its sparse_embedding \(Milvus field "
                       rf"'{FIELD}'\) {problem}"):  # fmt: skip
        store.write_documents([good, bad])
    assert store.count_documents() == 24


def test_a_write_of_many_chunks_checks_every_document_before_the_first_insert(db: str) -> None:
    """A weight of 1e-50 is non-zero in Python but 0 in float32: Milvus would refuse the third chunk of this write
    after storing the first two; the store refuses it first. 3.4028235e38 rounds to float32's largest: stored."""
    store = MilvusDocumentStore(
        uri=db, collection_name="chunked", learned_sparse_field_name=FIELD, index_chunk_size=2, embedding_dim=4
    )
    try:
        good = [Document(id=f"g{n}", content="x", sparse_embedding=SparseEmbedding([n], [1.0])) for n in range(4)]
        tiny = Document(id="tiny", content="x", sparse_embedding=SparseEmbedding(indices=[1], values=[1e-50]))
        with pytest.raises(ValueError, match=r"documents\[4\] \(id 'tiny'\).* has no non-zero weight in float32"):
            store.write_documents([*good, tiny])
        assert store.count_documents() == 0
        largest = Document(id="max", content="x", sparse_embedding=SparseEmbedding(indices=[1], values=[3.4028235e38]))
        assert store.write_documents([*good, largest]) == 5
        assert store.get_documents_by_id(["max"])[0].sparse_embedding == SparseEmbedding(
            [1], [float(np.finfo("f4").max)]
        )
        assert store.sparse_embedding_search([SparseEmbedding(indices=[1], values=[1e-50])], 5) == [[]]
    finally:
        store.close()


def test_a_store_without_the_field_cannot_search_sparse_embeddings(tmp_path: Path) -> None:
    store = MilvusDocumentStore(uri=str(tmp_path / "m.db"))
    with pytest.raises(MilvusCollectionError, match="sparse embedding search needs learned_sparse_field_name"):
        store.sparse_embedding_search(QUERIES, 5)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, f"has learned sparse field '{FIELD}', not None: set learned_sparse_field_name='{FIELD}'"),
        ({"learned_sparse_field_name": "other"}, "has no SPARSE_FLOAT_VECTOR field 'other'.*learned_sparse_field_name"),
    ],
)
def test_a_collection_with_another_learned_field_is_refused_naming_the_setting(
    store: MilvusDocumentStore, db: str, settings: dict[str, Any], message: str
) -> None:
    other = MilvusDocumentStore(uri=db, collection_name="learned", **settings)
    try:
        with pytest.raises(MilvusCollectionError, match=message):
            other.warm_up()
    finally:
        other.close()


def test_naming_the_bm25_field_as_the_learned_field_is_refused_at_open(db: str) -> None:
    """Milvus fills the BM25 field from the text: a store taking it for the learned field could neither write nor
    search it."""
    bm25 = MilvusDocumentStore(uri=db, collection_name="bm25_only")
    bm25.write_documents(corpus(1))
    bm25.close()
    other = MilvusDocumentStore(
        uri=db, collection_name="bm25_only", bm25=False, sparse_field_name="unused", learned_sparse_field_name="sparse"
    )
    try:
        with pytest.raises(
            MilvusCollectionError, match="fills 'sparse' with its BM25 function, but learned_sparse_field_name names it"
        ):
            other.warm_up()
    finally:
        other.close()


def test_the_field_setting_survives_yaml_and_must_be_a_distinct_name(tmp_path: Path) -> None:
    store = MilvusDocumentStore(uri=str(tmp_path / "m.db"), learned_sparse_field_name=FIELD)
    data = yaml.safe_load(yaml.safe_dump(store.to_dict()))
    assert MilvusDocumentStore.from_dict(data).settings.learned_sparse_field_name == FIELD
    with pytest.raises(ValueError, match="field names must differ"):
        MilvusDocumentStore(uri=str(tmp_path / "m.db"), learned_sparse_field_name="sparse")
    with pytest.raises(ValueError, match="must differ, from each other and from '_has_embedding'"):
        MilvusDocumentStore(uri=str(tmp_path / "m.db"), learned_sparse_field_name="_has_embedding")
    with pytest.raises(ValueError, match="learned_sparse_field_name must start with a letter"):
        MilvusDocumentStore(uri=str(tmp_path / "m.db"), learned_sparse_field_name="bad-name")
