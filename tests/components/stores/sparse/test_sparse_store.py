"""The sparse document store as a user meets it: writes, policies, filters, saves, reloads, and refused files."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError, MissingDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.stores.sparse.document_store import SparseDocumentStore
from tests.support.integrity import edit_manifest, live, reseal


def vec(pairs: dict[int, float]) -> SparseEmbedding:
    """A sparse vector from {term id: weight}."""
    return SparseEmbedding(indices=list(pairs), values=list(pairs.values()))


DOCS = [
    Document(id="sun", content="The sun is a star", meta={"kind": "star"}, sparse_embedding=vec({1: 2.0, 5: 0.5})),
    Document(id="moon", content="The moon orbits", meta={"kind": "moon"}, sparse_embedding=vec({2: 1.5, 5: 1.0})),
    Document(id="mars", content="Mars is red", meta={"kind": "planet"}, sparse_embedding=vec({3: 1.0, 5: 0.25})),
]


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A directory holding a saved three-document sparse index."""
    path = tmp_path / "sparse"
    SparseDocumentStore(path=str(path)).write_documents(DOCS)
    return path


def ids(documents: list[Document]) -> list[str]:
    """The ids of DOCUMENTS, in order."""
    return [d.id for d in documents]


def test_scores_are_dot_products_and_hits_carry_their_vectors_when_asked() -> None:
    """A query scores each document by the product of shared terms; no shared term, no hit. Hits come without
    their vectors (hundreds of terms each under SPLADE) unless ``return_embedding`` asks for them."""
    store = SparseDocumentStore()
    store.write_documents(DOCS)
    hits = store.sparse_embedding_retrieval(vec({5: 2.0, 1: 1.0}), top_k=10)
    assert [(d.id, d.score) for d in hits] == [("sun", 3.0), ("moon", 2.0), ("mars", 0.5)]
    assert {d.sparse_embedding for d in hits} == {None}
    [with_vectors] = store.sparse_embedding_retrieval_batch([vec({5: 2.0, 1: 1.0})], return_embedding=True)
    assert [d.sparse_embedding for d in with_vectors] == [d.sparse_embedding for d in DOCS]
    assert hits[0].meta == {"kind": "star", "retrieval_type": "sparse"}
    assert store.sparse_embedding_retrieval(vec({99: 1.0})) == []


def test_filters_keep_top_k_among_matching_documents() -> None:
    """A filter is applied before the top k is taken."""
    store = SparseDocumentStore()
    store.write_documents(DOCS)
    only = {"field": "meta.kind", "operator": "in", "value": ["moon", "planet"]}
    assert ids(store.sparse_embedding_retrieval(vec({5: 1.0}), filters=only, top_k=1)) == ["moon"]


def test_policies_overwrite_and_delete_are_searchable_at_once() -> None:
    """FAIL refuses an existing id, SKIP keeps it, OVERWRITE replaces its vector; deletes vanish from hits."""
    store = SparseDocumentStore()
    store.write_documents(DOCS)
    with pytest.raises(DuplicateDocumentError, match="sun"):
        store.write_documents([DOCS[0]])
    assert store.write_documents([DOCS[0]], policy=DuplicatePolicy.SKIP) == 0
    store.write_documents([replace(DOCS[2], sparse_embedding=vec({5: 9.0}))], policy=DuplicatePolicy.OVERWRITE)
    assert ids(store.sparse_embedding_retrieval(vec({5: 1.0}))) == ["mars", "moon", "sun"]
    store.delete_documents(["mars"])
    assert ids(store.sparse_embedding_retrieval(vec({5: 1.0}))) == ["moon", "sun"]
    with pytest.raises(MissingDocumentError):
        store.get_documents_by_id(["mars"])
    assert store.delete_by_filter({"field": "meta.kind", "operator": "==", "value": "moon"}) == 1
    assert ids(store.filter_documents()) == ["sun"]


def test_a_filter_stays_right_across_many_rewrites() -> None:
    """Each round empties the store and writes two documents, the matching one first or second: the filtered
    search returns the matching one every time (a mask cached for a freed state once answered for a new one)."""
    store = SparseDocumentStore()
    only_x = {"field": "meta.k", "operator": "==", "value": "x"}
    for trial in range(600):
        store.delete_all_documents()
        kinds = ["x", "y"] if trial % 2 == 0 else ["y", "x"]
        store.write_documents(
            [Document(id=f"{trial}-{i}", meta={"k": k}, sparse_embedding=vec({1: 1.0})) for i, k in enumerate(kinds)]
        )
        hits = store.sparse_embedding_retrieval(vec({1: 1.0}), filters=only_x)
        assert [h.meta["k"] for h in hits] == ["x"], f"round {trial}"


def test_an_empty_vector_is_stored_and_an_empty_query_finds_nothing(tmp_path: Path) -> None:
    """SPLADE gives an empty vector to a text in which no term activates: such a document is written, saved and
    reloaded (never a sparse hit), and a query with no active term returns no hits rather than an error."""
    empty = SparseEmbedding(indices=[], values=[])
    store = SparseDocumentStore(path=str(tmp_path / "sparse"))
    store.write_documents([*DOCS, Document(id="blank", content="", sparse_embedding=empty)])
    reloaded = SparseDocumentStore(path=str(tmp_path / "sparse"))
    assert reloaded.get_documents_by_id(["blank"])[0].sparse_embedding == empty
    assert ids(reloaded.sparse_embedding_retrieval(vec({5: 1.0}))) == ["moon", "sun", "mars"]
    assert reloaded.sparse_embedding_retrieval(empty) == []


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (Document(id="x", content="no vector"), r"documents\[1\] \(id 'x'\)\.sparse_embedding is missing"),
        (
            Document(id="x", sparse_embedding=vec({1: float("nan")})),
            r"documents\[1\] .*every value must be a finite number",
        ),
        (Document(id="x", sparse_embedding=SparseEmbedding([-1], [1.0])), r"every index must be a term id"),
        (Document(id="x", sparse_embedding=vec({1: 0.5, 2: -0.5})), r"\(id 'x'\).* weight -0\.5 is negative"),
    ],
)
def test_documents_without_a_valid_vector_are_refused_by_name(document: Document, message: str) -> None:
    """A document the index could not search (or would index wrong) is refused, naming it; nothing is written."""
    store = SparseDocumentStore()
    with pytest.raises(ValueError, match=message):
        store.write_documents([DOCS[0], document])
    assert store.count_documents() == 0


def test_a_reloaded_store_answers_the_same_and_keeps_documents_once(saved: Path) -> None:
    """Saved in the BM25 segment layout; reloading gives the same hits, and documents.jsonl holds no vectors."""
    files = sorted(p.name for p in live(saved).iterdir())
    assert {"data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "ids.json"} <= set(files)
    assert 'sparse_embedding": null' in (live(saved) / "documents.jsonl").read_text()
    loaded = SparseDocumentStore(path=str(saved))
    hits = loaded.sparse_embedding_retrieval(vec({5: 2.0, 1: 1.0}))
    assert (hits[0].id, hits[0].score, hits[0].content) == ("sun", 3.0, "The sun is a star")
    assert loaded.filter_documents({"field": "meta.kind", "operator": "==", "value": "planet"})[0].sparse_embedding
    assert json.loads((live(saved) / "manifest.json").read_text())["documents"] == 3


def test_a_failed_save_leaves_memory_and_disk_as_they_were(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write whose save fails is undone in memory, and the saved generation stays the one before it."""
    from components.stores.sparse import document_store

    store = SparseDocumentStore(path=str(saved))
    before = live(saved).name

    def broken(*args: object) -> dict:
        raise OSError("disk full")

    monkeypatch.setattr(document_store, "write_generation", broken)
    with pytest.raises(OSError, match="disk full"):
        store.write_documents([Document(id="venus", sparse_embedding=vec({5: 5.0}))])
    assert store.count_documents() == 3
    assert live(saved).name == before
    assert ids(store.sparse_embedding_retrieval(vec({5: 1.0}), top_k=1)) == ["moon"]


def _rewrite(path: Path, array: np.ndarray) -> None:
    """Replace an array file and record its new digest (a tamperer with write access)."""
    np.save(path, array)
    reseal(path)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda g: (g / "data.csc.index.npy").write_bytes(b"x" * 10), r"data\.csc\.index\.npy: corrupted, \d+ bytes"),
        (
            lambda g: _rewrite(g / "indices.csc.index.npy", np.array([0, 7, 1, 0, 1, 2], dtype=np.int32)),
            r"indices\.csc\.index\.npy: corrupted, values from 0 to 7",
        ),
        (
            lambda g: _rewrite(g / "data.csc.index.npy", np.array([2, 1.5, 1, np.inf, 1, 0.25], dtype=np.float32)),
            r"data\.csc\.index\.npy: corrupted, values",
        ),
        (
            lambda g: _rewrite(g / "data.csc.index.npy", np.array([2, 1.5, 1, -1, 1, 0.25], dtype=np.float32)),
            r"data\.csc\.index\.npy: corrupted, values from -1",
        ),
        (
            lambda g: _rewrite(g / "indptr.csc.index.npy", np.array([0, 0, 1, 2, 1, 4, 6], dtype=np.int64)),
            r"indptr\.csc\.index\.npy: corrupted, offsets must start at 0 and never decrease",
        ),
        (
            lambda g: edit_manifest(g / "manifest.json", lambda m: m.update(documents=2)),
            r"ids\.json: corrupted, 3 ids where the manifest counts 2",
        ),
        (
            lambda g: edit_manifest(g / "manifest.json", lambda m: m.update(format="needle-bm25")),
            r"format 'needle-bm25' is not supported",
        ),
    ],
)
def test_a_tampered_or_damaged_file_is_refused_naming_it(saved: Path, tamper, message: str) -> None:
    """Every saved file is checked (digest, then dtype, length and range) before a search can read it."""
    tamper(live(saved))
    with pytest.raises(DocumentStoreError, match=message):
        SparseDocumentStore(path=str(saved)).count_documents()


def test_documents_can_live_only_in_the_sibling_faiss_store(tmp_path: Path) -> None:
    """With document_store_path the generation holds no documents; hits are read from the FAISS store."""
    from components.stores.faiss.document_store import FAISSDocumentStore

    embedded = [replace(d, embedding=[1.0, float(i), 0.5], sparse_embedding=None) for i, d in enumerate(DOCS)]
    FAISSDocumentStore(path=str(tmp_path / "dense")).write_documents(embedded)
    SparseDocumentStore(path=str(tmp_path / "sparse"), document_store_path=str(tmp_path / "dense")).write_documents(
        DOCS
    )
    assert not (live(tmp_path / "sparse") / "documents.jsonl").exists()
    reloaded = SparseDocumentStore(path=str(tmp_path / "sparse"))
    hits = reloaded.sparse_embedding_retrieval(vec({3: 1.0}), return_embedding=True)
    assert [(d.id, d.content, d.sparse_embedding) for d in hits] == [("mars", "Mars is red", DOCS[2].sparse_embedding)]
    with pytest.raises(ValueError, match=r"document_store_path .* differs from the saved index's"):
        SparseDocumentStore(path=str(tmp_path / "sparse"), document_store_path=str(tmp_path)).count_documents()


def test_serialization_round_trip() -> None:
    """to_dict/from_dict keep every setting."""
    store = SparseDocumentStore(path="idx/sparse", autosave=False)
    assert SparseDocumentStore.from_dict(store.to_dict()).to_dict() == store.to_dict()
    with pytest.raises(ValueError, match="autosave must be true or false"):
        SparseDocumentStore(autosave="yes")  # type: ignore[arg-type]


def test_metadata_updates_and_pages_keep_the_vectors(saved: Path) -> None:
    """update_by_filter changes metadata only (the saved index answers the same scores); pages walk every document."""
    store = SparseDocumentStore(path=str(saved))
    assert store.update_by_filter({"field": "meta.kind", "operator": "==", "value": "moon"}, {"seen": True}) == 1
    reloaded = SparseDocumentStore(path=str(saved))
    hits = reloaded.sparse_embedding_retrieval(vec({2: 1.0}))
    assert [(d.id, d.score, d.meta.get("seen")) for d in hits] == [("moon", 1.5, True)]
    pages = list(reloaded.iter_document_pages(page_size=2))
    assert [ids(page) for page in pages] == [["sun", "moon"], ["mars"]]
    assert pages[1][0].sparse_embedding == DOCS[2].sparse_embedding
