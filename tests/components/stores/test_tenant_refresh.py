"""Tenant filters after writes and deletes: the row lists a store keeps are brought up to date (deleted rows dropped,
the new rows' values read), not read again, and a tenant search still answers exactly what the generic filtered
search answers (``test_tenant_filters.py``'s property tests, with changes between searches)."""

import tempfile
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy
from hypothesis import given, settings
from hypothesis import strategies as st

import components.stores.bm25.tenant_segments as bm25_tenants
import components.stores.faiss.tenant_rows as faiss_tenants
from components.stores import BM25DocumentStore, FAISSDocumentStore
from tests.components.stores.test_tenant_filters import DIM, FILTERS, WORDS, corpus, equality, generic, hits

STEPS = st.lists(st.sampled_from(["write", "overwrite", "delete", "meta"]), min_size=1, max_size=4)
"""Changes between two searches: new documents, old ids written again (other tenants, other vectors), deletes, and
a meta update (which drops what the store keeps)."""


def change(store: Any, step: str, number: int, rng: np.random.Generator) -> None:
    """Apply STEP (the NUMBER-th change) to STORE: every kind of store takes the same calls."""
    if step == "write":
        store.write_documents([replace(document, id=f"new{number}-{document.id}") for document in corpus(number, 12)])
    elif step == "overwrite":
        again = corpus(number + 100, 300)
        store.write_documents([again[int(i)] for i in rng.choice(300, 10, replace=False)], DuplicatePolicy.OVERWRITE)
    elif step == "delete":
        store.delete_documents([f"d{int(i)}" for i in rng.choice(300, 15, replace=False)])
    else:
        store.update_by_filter({"field": "meta.n", "operator": "==", "value": number % 5}, {"tenant": "acme"})


@pytest.mark.parametrize("table", ["memory", "saved", "disk"])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), filters=FILTERS, top_k=st.sampled_from([1, 5, 40]), steps=STEPS)
def test_faiss_tenant_search_after_changes_equals_the_generic_path(
    table: str, seed: int, filters: dict[str, Any], top_k: int, steps: list[str]
) -> None:
    rng = np.random.default_rng(seed)
    asked = rng.standard_normal((7, DIM)).astype(np.float32)
    with tempfile.TemporaryDirectory() as folder:
        if table == "saved":  # a saved generation, changed in a temporary copy (autosave off: the same table)
            FAISSDocumentStore(path=folder).write_documents(corpus(seed, 300))
        store = FAISSDocumentStore(path=folder, autosave=False) if table != "memory" else FAISSDocumentStore()
        if table != "saved":
            store.write_documents(corpus(seed, 300))
        store.search(asked, top_k, filters)  # the row lists are read, then kept through the changes
        for number, step in enumerate(steps):
            change(store, step, number, rng)
            assert hits(store.search(asked, top_k, filters)) == hits(store.search(asked, top_k, generic(filters)))


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), filters=FILTERS, top_k=st.sampled_from([1, 5, 40]), steps=STEPS)
def test_bm25_tenant_search_after_changes_equals_the_generic_path(
    backend: str, seed: int, filters: dict[str, Any], top_k: int, steps: list[str]
) -> None:
    rng = np.random.default_rng(seed)
    store = BM25DocumentStore(backend=backend)
    store.write_documents(corpus(seed, 300))
    queries = [" ".join(rng.choice(WORDS, size=3).tolist()) for _ in range(4)]
    store.bm25_retrieval_batch(queries, filters, top_k)  # the row lists are read, then kept through the changes
    for number, step in enumerate(steps):
        change(store, step, number, rng)
        fast = store.bm25_retrieval_batch(queries, filters, top_k)
        assert hits(fast) == hits(store.bm25_retrieval_batch(queries, generic(filters), top_k))


def test_a_faiss_write_reads_the_field_of_the_new_documents_only(monkeypatch: pytest.MonkeyPatch) -> None:
    store = FAISSDocumentStore()
    store.write_documents(corpus(1, 300))
    query = np.ones((1, DIM), np.float32)
    store.search(query, 5, equality("acme"))
    read: list[int] = []
    real = faiss_tenants.meta_values

    def spy(*args: Any) -> list[tuple[int, Any]]:
        found = real(*args)
        read.append(len(found))
        return found

    monkeypatch.setattr(faiss_tenants, "meta_values", spy)
    store.delete_documents(["d0", "d1"])
    store.write_documents([Document(id="new", content="x", meta={"tenant": "acme"}, embedding=[1.0] * DIM)])
    assert store.search(query, 1, equality("acme"))[0][0].id == "new"
    assert read == [1]  # the new document's field, not the 299 documents' again


def test_a_bm25_write_groups_the_delta_segment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    store = BM25DocumentStore()
    store.write_documents(corpus(1, 300))
    store.bm25_retrieval("apple", equality("acme"), 5)
    grouped: list[int] = []
    real = bm25_tenants._grouped

    def spy(ids: list[str], *args: Any) -> Any:
        grouped.append(len(ids))
        return real(ids, *args)

    monkeypatch.setattr(bm25_tenants, "_grouped", spy)
    store.delete_documents(["d0", "d1"])
    store.write_documents([Document(id="new", content="zzz", meta={"tenant": "acme"})])
    assert [d.id for d in store.bm25_retrieval("zzz", equality("acme"), 5)] == ["new"]
    assert grouped == [1]  # the delta segment's one document, not the main segment's 300 again
