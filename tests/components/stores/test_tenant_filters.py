"""Tenant filters on the FAISS and BM25 stores (``components.stores.tenants``): an equality on a meta field, alone or
in an AND, answers exactly what the generic filtered search answers (hits and scores), without testing any document
of another tenant, and follows every change of the store.

The generic path is reached with the same filter written as ``NOT(NOT(f))``, which the fast path does not recognise.
"""

import gc
import math
import tempfile
import threading
import weakref
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.utils.filters import document_matches_filter
from hypothesis import given, settings
from hypothesis import strategies as st

import components.stores.bm25.documents as bm25_documents
import components.stores.bm25.tenant_segments as bm25_tenants
import components.stores.faiss.sqlite_document_table as faiss_table
import components.stores.faiss.tenant_rows as faiss_tenants
import components.stores.transactions as transactions
from components.stores import BM25DocumentStore, FAISSDocumentStore
from components.stores.faiss.vector_index import FAISSVectorIndex
from components.stores.tenants import tenant_filter

DIM = 8
WORDS = ["apple", "pear", "plum", "fig", "lime", "kiwi", "date", "melon", "grape", "peach"]
TENANTS = ["acme", "globex", "initech", "umbrella"]
SMUGGLED = "acme\x00evil"  # SQLite's json_extract cuts it at the NUL: "acme"


def generic(filters: dict[str, Any]) -> dict[str, Any]:
    """FILTERS in a form the tenant path does not recognise: the generic filtered search answers it."""
    return {"operator": "NOT", "conditions": [{"operator": "NOT", "conditions": [filters]}]}


def equality(value: Any, field: str = "meta.tenant") -> dict[str, Any]:
    return {"field": field, "operator": "==", "value": value}


def corpus(seed: int, size: int) -> list[Document]:
    """SIZE documents of unequal tenants; some lack the field, some hold a number, a boolean or a list there."""
    rng = np.random.default_rng(seed)
    odd: list[Any] = [None, 7, 7.0, True, ["acme"], {"name": "acme"}, SMUGGLED, SMUGGLED]
    documents = []
    for i in range(size):
        meta: dict[str, Any] = {"n": int(rng.integers(0, 5))}
        pick = rng.random()
        if pick < 0.8:
            meta["tenant"] = TENANTS[min(int(rng.exponential(1.0)), len(TENANTS) - 1)]
        elif pick < 0.95:
            meta["tenant"] = odd[int(rng.integers(0, len(odd)))]
        text = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 9))).tolist())
        embedding = rng.standard_normal(DIM).round(1).tolist()  # rounded: equal scores happen, ties are ranked too
        documents.append(Document(id=f"d{i}", content=text, meta=meta, embedding=embedding))
    return documents


def hits(found: list[list[Document]]) -> list[list[tuple[str, float | None]]]:
    return [[(document.id, document.score) for document in documents] for documents in found]


FILTERS = st.one_of(
    st.sampled_from([*TENANTS, "nobody", 7, True, None, SMUGGLED]).map(equality),
    st.tuples(st.sampled_from(TENANTS), st.integers(0, 4)).map(
        lambda pair: {
            "operator": "AND",
            "conditions": [{"field": "meta.n", "operator": ">=", "value": pair[1]}, equality(pair[0])],
        }
    ),
    st.sampled_from(TENANTS).map(
        lambda tenant: {
            "operator": "AND",
            "conditions": [
                {"operator": "AND", "conditions": [equality(tenant)]},
                {"operator": "OR", "conditions": [{"field": "meta.n", "operator": "==", "value": 1}, equality("x")]},
            ],
        }
    ),
)


@pytest.mark.parametrize(
    ("metric", "factory"), [("inner_product", "Flat"), ("cosine", "Flat"), ("l2", "Flat"), ("inner_product", "HNSW8")]
)
@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    filters=FILTERS,
    top_k=st.sampled_from([1, 5, 40]),
    queries=st.sampled_from([1, 7, 19, 20, 40]),  # FAISS scores 20 queries and more with BLAS
    saved=st.booleans(),  # built in this process (an IndexFlat), or reopened from its files (an IndexFlatIP/L2)
)
def test_faiss_tenant_search_equals_the_generic_path(
    metric: str, factory: str, seed: int, filters: dict[str, Any], top_k: int, queries: int, saved: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = FAISSDocumentStore(metric=metric, index_factory=factory, path=folder if saved else None)
        store.write_documents(corpus(seed, 300))
        if saved:
            store = FAISSDocumentStore(metric=metric, index_factory=factory, path=folder)
        asked = np.random.default_rng(seed + 1).standard_normal((queries, DIM)).astype(np.float32)
        assert tenant_filter(filters) is not None
        fast = hits(store.search(asked, top_k, filters))
        assert fast == hits(store.search(asked, top_k, generic(filters)))
        if factory == "Flat" and any(fast):  # the tenant's own Flat index answered, not the generic FAISS call
            assert store._tenant_rows.kept_flats == 1


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), filters=FILTERS, top_k=st.sampled_from([1, 5, 40]))
def test_bm25_tenant_search_equals_the_generic_path(
    backend: str, seed: int, filters: dict[str, Any], top_k: int
) -> None:
    documents = corpus(seed, 300)
    store = BM25DocumentStore(backend=backend)
    store.write_documents(documents[:250])
    store.write_documents(documents[250:])  # a delta segment beside the main one
    store.delete_documents([f"d{i}" for i in range(0, 300, 9)])  # deleted main and delta rows
    rng = np.random.default_rng(seed)
    queries = [" ".join(rng.choice(WORDS, size=3).tolist()) for _ in range(6)]
    fast = store.bm25_retrieval_batch(queries, filters, top_k)
    assert hits(fast) == hits(store.bm25_retrieval_batch(queries, generic(filters), top_k))


def test_a_saved_faiss_store_reads_the_field_of_every_kind_of_value(tmp_path: Any) -> None:
    documents = corpus(3, 200)
    documents[0].meta["other"] = math.nan  # a document only Python's JSON reads (SQLite's refuses NaN)
    documents[0].meta["tenant"] = "acme"
    FAISSDocumentStore(path=str(tmp_path)).write_documents(documents)
    store = FAISSDocumentStore(path=str(tmp_path))  # a saved generation: its documents stay in SQLite
    asked = np.random.default_rng(0).standard_normal((3, DIM)).astype(np.float32)
    for value in ["acme", "initech", 7, True, None]:
        assert hits(store.search(asked, 50, equality(value))) == hits(store.search(asked, 50, generic(equality(value))))
    assert "d0" in [document.id for document in store.search(asked, 200, equality("acme"))[0]]


def test_a_nul_in_a_tenant_does_not_file_it_under_its_prefix(tmp_path: Any) -> None:
    """SQLite's json_extract reads "acme\\x00evil" as "acme": the other tenant's document must not reach acme."""
    documents = [
        Document(id="mine", content="x", meta={"tenant": "acme"}, embedding=[1.0] + [0.0] * (DIM - 1)),
        Document(id="theirs", content="x", meta={"tenant": SMUGGLED}, embedding=[0.0, 1.0] + [0.0] * (DIM - 2)),
    ]
    FAISSDocumentStore(path=str(tmp_path)).write_documents(documents)
    in_memory = FAISSDocumentStore()
    in_memory.write_documents(documents)
    for store in (FAISSDocumentStore(path=str(tmp_path)), in_memory):
        query = np.ones((1, DIM), np.float32)
        assert [d.id for d in store.search(query, 10, equality("acme"))[0]] == ["mine"]
        assert [d.id for d in store.search(query, 10, equality(SMUGGLED))[0]] == ["theirs"]


def test_a_tenant_over_the_budget_is_searched_in_the_shared_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tenant larger than the Flat budget is not copied into a Flat index at every search (slower than no
    filter): the store's index answers it with a selector of its rows, with the same hits."""
    monkeypatch.setattr(faiss_tenants, "MIN_BUDGET", 20)
    store = FAISSDocumentStore()
    store.write_documents(corpus(4, 300))
    copied: list[int] = []
    real = FAISSVectorIndex.reconstruct

    def spy(self: FAISSVectorIndex, rows: np.ndarray) -> np.ndarray:
        copied.append(len(rows))
        return real(self, rows)

    monkeypatch.setattr(FAISSVectorIndex, "reconstruct", spy)
    asked = np.random.default_rng(0).standard_normal((3, DIM)).astype(np.float32)
    for tenant in ("acme", "acme", "umbrella"):  # acme: most of the 300; umbrella: a few, under the budget
        assert hits(store.search(asked, 5, equality(tenant))) == hits(store.search(asked, 5, generic(equality(tenant))))
    assert copied
    assert all(size <= 20 for size in copied)  # only the small tenant's vectors were copied
    assert store._tenant_rows.kept_flats == 1


@pytest.mark.parametrize("kind", ["faiss", "bm25"])
def test_no_search_sees_the_rows_from_before_a_change(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search on another thread that gets the store's lock as a meta update's transaction ends must wait for the
    tenant rows to be cleared, not answer from those before the update."""
    documents = corpus(2, 60)
    store: Any = FAISSDocumentStore() if kind == "faiss" else BM25DocumentStore()
    store.write_documents(documents)

    def acme() -> set[str]:
        if kind == "faiss":
            return {d.id for d in store.search(np.ones((1, DIM), np.float32), 60, equality("acme"))[0]}
        return {d.id for d in store.bm25_retrieval(" ".join(WORDS), equality("acme"), 60)}

    before = acme()
    moved = sorted(before)[0]
    seen: list[set[str]] = []
    reader = threading.Thread(target=lambda: seen.append(acme()))
    real = transactions.TransactionalStore._mutate

    def then_a_reader(self: Any, change: Any) -> Any:
        result = real(self, change)  # the transaction's own hold of the lock ends here
        reader.start()
        reader.join(timeout=0.5)  # it runs now if nothing else holds the lock
        return result

    monkeypatch.setattr(transactions.TransactionalStore, "_mutate", then_a_reader)
    store.update_by_filter({"field": "id", "operator": "==", "value": moved}, {"tenant": "globex"})
    reader.join()
    assert seen == [before - {moved}]


@pytest.mark.parametrize("kind", ["faiss", "bm25"])
def test_a_cleared_cache_lets_the_old_index_go(kind: str) -> None:
    """delete_all_documents replaces the index: the tenant cache must not keep the old one alive."""
    store: Any = FAISSDocumentStore() if kind == "faiss" else BM25DocumentStore()
    store.write_documents(corpus(6, 50))
    if kind == "faiss":
        store.search(np.ones((1, DIM), np.float32), 3, equality("acme"))
        old = weakref.ref(store._vectors)
    else:
        store.bm25_retrieval("apple", equality("acme"), 3)
        old = weakref.ref(store._index.snapshot().main)
    store.delete_all_documents()
    gc.collect()
    assert old() is None


def test_the_bm25_tenant_cache_holds_no_more_bytes_than_the_main_matrix() -> None:
    """Many small tenants: what their copies really hold (arrays) stays within the main matrix's bytes."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(2000)]
    documents = [
        Document(id=f"d{i}", content=" ".join(rng.choice(words, 20).tolist()), meta={"tenant": f"t{i // 2}"})
        for i in range(600)
    ]
    store: Any = BM25DocumentStore()
    store.write_documents(documents)
    for tenant in range(300):
        store.bm25_retrieval("w1 w2", equality(f"t{tenant}"), 3)
    scores = store._index.snapshot().main.bm25.scores
    budget = sum(np.asarray(scores[name]).nbytes for name in ("data", "indices", "indptr"))
    kept = store._tenant_rows._views.values()
    arrays = sum(
        view.matrix._scorer.data.nbytes
        + view.matrix._scorer.indices.nbytes
        + view.matrix._scorer.indptr.nbytes
        + view.matrix.terms.nbytes
        for view in kept
    )
    assert 0 < arrays <= budget


def counting(monkeypatch: pytest.MonkeyPatch, modules: list[Any]) -> list[str]:
    """Record the id of every document the filter code of MODULES tests (the real test still runs)."""
    seen: list[str] = []
    real = document_matches_filter

    def spy(filters: dict[str, Any], document: Document, **kwargs: Any) -> bool:
        seen.append(document.id)
        return real(filters, document, **kwargs)

    for module in modules:
        monkeypatch.setattr(module, "document_matches_filter", spy)
    return seen


def test_a_tenant_search_tests_no_document_of_another_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    documents = corpus(5, 400)
    acme = {d.id for d in documents if d.meta.get("tenant") == "acme"}
    dense, sparse = FAISSDocumentStore(), BM25DocumentStore()
    dense.write_documents(documents)
    sparse.write_documents(documents)
    seen = counting(monkeypatch, [faiss_table, faiss_tenants, bm25_documents, bm25_tenants])
    rest = {"field": "meta.n", "operator": ">", "value": 1}
    both = {"operator": "AND", "conditions": [rest, equality("acme")]}
    query = np.ones((1, DIM), np.float32)
    found = dense.search(query, 400, both)[0] + sparse.bm25_retrieval("apple pear plum fig", both, 400)
    assert found
    assert {d.id for d in found} <= acme
    assert set(seen) <= acme  # the rest of the AND was tested on acme's documents only
    seen.clear()
    dense.search(query, 5, generic(both))
    assert len(seen) == len(documents)  # what the generic path costs: every document tested


@pytest.mark.parametrize("kind", ["faiss", "bm25"])
def test_a_tenant_search_follows_every_change(kind: str, tmp_path: Any) -> None:
    documents = corpus(9, 200)
    if kind == "faiss":
        store: Any = FAISSDocumentStore(path=str(tmp_path))
        query: Any = np.ones((1, DIM), np.float32)

        def ids() -> set[str]:
            return {d.id for d in store.search(query, 200, equality("acme"))[0]}
    else:
        store = BM25DocumentStore(path=str(tmp_path))
        query = " ".join(WORDS)

        def ids() -> set[str]:
            return {d.id for d in store.bm25_retrieval(query, equality("acme"), 200)}

    store.write_documents(documents)
    acme = {d.id for d in documents if d.meta.get("tenant") == "acme"}
    assert ids() == acme
    moved = sorted(acme)[:3]
    store.update_by_filter({"field": "id", "operator": "in", "value": moved}, {"tenant": "globex"})
    assert ids() == acme - set(moved)
    store.delete_documents([sorted(acme)[-1]])
    store.write_documents([Document(id="new", content="apple pear", meta={"tenant": "acme"}, embedding=[1.0] * DIM)])
    assert ids() == (acme - set(moved) - {sorted(acme)[-1]}) | {"new"}


@pytest.mark.parametrize(
    ("filters", "recognised"),
    [
        (equality("acme"), True),
        (equality(3), True),
        (equality("2024-01-01"), False),  # Haystack compares ISO dates as instants, not as strings
        (equality(["acme"]), False),
        (equality(math.nan), False),
        (equality("acme", field="tenant"), False),  # a legacy field without meta.
        ({"field": "meta.tenant", "operator": "!=", "value": "acme"}, False),
        ({"operator": "OR", "conditions": [equality("acme")]}, False),
        ({"operator": "AND", "conditions": [{"operator": "AND", "conditions": [equality("acme")]}]}, True),
    ],
)
def test_which_filters_take_the_tenant_path(filters: dict[str, Any], recognised: bool) -> None:
    assert (tenant_filter(filters) is not None) is recognised
