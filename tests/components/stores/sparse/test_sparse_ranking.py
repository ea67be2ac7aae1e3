"""The sparse store ranks exactly as a dense numpy dot product does, through writes, deletes, filters and a reload."""

import numpy as np
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from hypothesis import given, settings
from hypothesis import strategies as st

from components.stores.sparse.document_store import SparseDocumentStore

VOCABULARY = 40


def random_vector(rng: np.random.Generator, width: int = VOCABULARY) -> SparseEmbedding:
    """A vector of 1 to 6 distinct term ids below WIDTH with weights in (0, 3], as float32 values."""
    terms = np.sort(rng.choice(width, size=int(rng.integers(1, 7)), replace=False))
    weights = rng.uniform(0.01, 3.0, size=len(terms)).astype(np.float32)
    return SparseEmbedding(indices=terms.tolist(), values=weights.tolist())


def dense(vector: SparseEmbedding, width: int) -> np.ndarray:
    """VECTOR as a dense float64 row."""
    row = np.zeros(width)
    row[vector.indices] = vector.values
    return row


def reference(docs: dict[str, tuple[SparseEmbedding, int]], query: SparseEmbedding, k: int, parity: int | None):
    """The numpy answer: documents sharing a term with QUERY (and of PARITY, if given), by dot product, best K."""
    width = VOCABULARY + 10
    q = dense(query, width)
    scored = [
        (float(dense(v, width) @ q), doc_id)
        for doc_id, (v, n) in docs.items()
        if set(v.indices) & set(query.indices) and (parity is None or n % 2 == parity)
    ]
    scored.sort(key=lambda pair: -pair[0])
    return scored[:k]


def check_same(found: list[Document], expected: list[tuple[float, str]]) -> None:
    """Same scores in the same order; ids equal wherever the score is not tied with a neighbour."""
    assert [round(d.score, 4) for d in found] == [round(s, 4) for s, _ in expected]
    for position, (score, doc_id) in enumerate(expected):
        tied = [s for s, _ in expected if abs(s - score) < 1e-5]
        if len(tied) == 1 and position < len(expected) - 1:
            assert found[position].id == doc_id


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 12), filtered=st.booleans())
def test_ranking_equals_numpy_dot_product(seed: int, k: int, filtered: bool, tmp_path_factory) -> None:
    """Random corpora written in batches, overwritten, deleted, saved and reloaded: every query's hits are the
    reference's (scores, order, membership), with and without a metadata filter."""
    rng = np.random.default_rng(seed)
    path = tmp_path_factory.mktemp("sparse")
    store = SparseDocumentStore(path=str(path), autosave=False)  # one save below: fsyncs are the slow part
    docs: dict[str, tuple[SparseEmbedding, int]] = {}
    for batch in range(3):
        written = []
        for _ in range(int(rng.integers(1, 25))):
            doc_id, n = f"d{int(rng.integers(0, 60))}", int(rng.integers(0, 100))
            vector = random_vector(rng)
            docs[doc_id] = (vector, n)
            written.append(Document(id=doc_id, content=f"n={n}", meta={"n": n}, sparse_embedding=vector))
        store.write_documents(written, policy="overwrite")
        gone = [f"d{int(i)}" for i in rng.integers(0, 60, size=2)] if batch == 1 else []
        store.delete_documents(gone)
        for doc_id in gone:
            docs.pop(doc_id, None)
    store.save()
    reloaded = SparseDocumentStore(path=str(path))
    parity = int(rng.integers(0, 2)) if filtered else None
    filters = {"field": "meta.n", "operator": "in", "value": list(range(parity, 100, 2))} if filtered else None
    for _ in range(4):
        query = random_vector(rng, VOCABULARY + 10)  # terms no document has are ignored
        expected = reference(docs, query, k, parity)
        for searched in (store, reloaded):
            check_same(searched.sparse_embedding_retrieval(query, filters=filters, top_k=k), expected)
