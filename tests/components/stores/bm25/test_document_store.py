"""BM25DocumentStore against Haystack's DocumentStore test suites, plus its own parameter checks."""

import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError, MissingDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.testing.document_store import (
    CountDocumentsByFilterTest,
    CountDocumentsTest,
    CountUniqueMetadataByFilterTest,
    DeleteAllTest,
    DeleteByFilterTest,
    DeleteDocumentsTest,
    FilterDocumentsTest,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldUniqueValuesTest,
    UpdateByFilterTest,
    WriteDocumentsTest,
)
from haystack.testing.document_store_async import (
    CountDocumentsAsyncTest,
    CountDocumentsByFilterAsyncTest,
    CountUniqueMetadataByFilterAsyncTest,
    DeleteAllAsyncTest,
    DeleteByFilterAsyncTest,
    DeleteDocumentsAsyncTest,
    FilterDocumentsAsyncTest,
    GetMetadataFieldMinMaxAsyncTest,
    GetMetadataFieldsInfoAsyncTest,
    GetMetadataFieldUniqueValuesAsyncTest,
    UpdateByFilterAsyncTest,
    WriteDocumentsAsyncTest,
)

from components.stores.bm25.document_store import BM25DocumentStore


class TestBM25DocumentStoreProtocol(
    CountDocumentsTest,
    WriteDocumentsTest,
    DeleteDocumentsTest,
    FilterDocumentsTest,
    DeleteAllTest,
    DeleteByFilterTest,
    UpdateByFilterTest,
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldUniqueValuesTest,
):
    """Haystack's suites, run once on a fresh in-memory store and once on a store with a saved path."""

    @pytest.fixture(params=["memory", "saved"])
    def document_store(self, request: pytest.FixtureRequest, tmp_path) -> BM25DocumentStore:
        """A store kept in memory, or one that saves itself to a directory after every write (autosave)."""
        if request.param == "memory":
            return BM25DocumentStore()
        return BM25DocumentStore(path=str(tmp_path / "bm25"))

    def test_write_documents(self, document_store: BM25DocumentStore) -> None:
        """The default policy fails on an existing id and writes nothing of that batch."""
        docs = [Document(id="1", content="first"), Document(id="2", content="second")]
        assert document_store.write_documents(docs) == 2
        with pytest.raises(DuplicateDocumentError, match=r"ID '2' \(documents\[1\]\) already exists"):
            document_store.write_documents([Document(id="3", content="third"), docs[1]])
        assert [d.id for d in document_store.filter_documents()] == ["1", "2"]


class TestBM25DocumentStoreAsyncProtocol(
    CountDocumentsAsyncTest,
    CountDocumentsByFilterAsyncTest,
    CountUniqueMetadataByFilterAsyncTest,
    DeleteAllAsyncTest,
    DeleteByFilterAsyncTest,
    DeleteDocumentsAsyncTest,
    FilterDocumentsAsyncTest,
    GetMetadataFieldsInfoAsyncTest,
    GetMetadataFieldMinMaxAsyncTest,
    GetMetadataFieldUniqueValuesAsyncTest,
    UpdateByFilterAsyncTest,
    WriteDocumentsAsyncTest,
):
    """The async twins (what DocumentWriter and Hayhooks call) against Haystack's async suites."""

    @pytest.fixture(params=["memory", "saved"])
    def document_store(self, request: pytest.FixtureRequest, tmp_path) -> BM25DocumentStore:
        """A store kept in memory, or one that saves itself after every write."""
        return BM25DocumentStore(path=str(tmp_path / "bm25") if request.param == "saved" else None)

    async def test_write_documents_async(self, document_store: BM25DocumentStore) -> None:
        """A write is searchable through the async retrieval twins; a duplicate fails like the sync call."""
        doc = Document(id="1", content="saturn rings of ice")
        assert await document_store.write_documents_async([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            await document_store.write_documents_async([doc])
        assert [d.id for d in await document_store.bm25_retrieval_async("ice rings")] == ["1"]
        assert [[d.id for d in hits] for hits in await document_store.bm25_retrieval_batch_async(["ice", "x"])] == [
            ["1"],
            [],
        ]


def test_written_documents_are_searchable_and_reloaded_after_autosave(tmp_path) -> None:
    """With a path, every write is saved: a new store on the same path finds it."""
    path = str(tmp_path / "bm25")
    BM25DocumentStore(path=path).write_documents([Document(id="a", content="saturn rings of ice")])
    hits = BM25DocumentStore(path=path).bm25_retrieval("ice rings")
    assert [d.id for d in hits] == ["a"]


def test_overwrite_replaces_content_in_the_index() -> None:
    """After OVERWRITE, the old text no longer matches and the new one does."""
    store = BM25DocumentStore()
    store.write_documents([Document(id="x", content="volcano eruption lava")])
    assert store.bm25_retrieval("volcano")
    store.write_documents([Document(id="x", content="glacier ice melting")], policy=DuplicatePolicy.OVERWRITE)
    assert store.bm25_retrieval("volcano") == []
    assert [d.id for d in store.bm25_retrieval("glacier")] == ["x"]


def test_skip_keeps_the_first_version() -> None:
    """SKIP writes nothing for an existing id, and search keeps seeing the first content."""
    store = BM25DocumentStore()
    store.write_documents([Document(id="x", content="volcano eruption lava")])
    assert store.write_documents([Document(id="x", content="glacier ice")], policy=DuplicatePolicy.SKIP) == 0
    assert store.bm25_retrieval("glacier") == []


@pytest.mark.parametrize(("policy", "kept", "gone"), [(DuplicatePolicy.SKIP, "volcano", "glacier"),
                                                      (DuplicatePolicy.OVERWRITE, "glacier", "volcano")])  # fmt: skip
def test_an_id_repeated_in_one_batch_is_indexed_with_the_content_it_keeps(
    policy: DuplicatePolicy, kept: str, gone: str
) -> None:
    """SKIP keeps a batch's first copy of an id, OVERWRITE its last; search finds the kept text, not the other."""
    store = BM25DocumentStore()
    batch = [Document(id="x", content="volcano eruption lava"), Document(id="x", content="glacier ice melting")]
    assert store.write_documents(batch, policy=policy) == 1
    assert store.bm25_retrieval(gone) == []
    assert [d.content.split()[0] for d in store.bm25_retrieval(kept)] == [kept]


def test_get_documents_by_id_keeps_the_order_and_names_missing_ids() -> None:
    """Documents come back in the order asked; an unknown id is an error naming it."""
    store = BM25DocumentStore()
    store.write_documents([Document(id="a", content="alpha"), Document(id="b", content="beta")])
    assert [d.id for d in store.get_documents_by_id(["b", "a"])] == ["b", "a"]
    with pytest.raises(MissingDocumentError, match=r"1 of the ids are not in this store, e.g. \['zzz'\]"):
        store.get_documents_by_id(["a", "zzz"])


def test_write_documents_names_the_bad_item() -> None:
    """A non-Document in the list is refused with its position; a non-list with its type."""
    with pytest.raises(ValueError, match=r"documents\[1\] must be a Document, got str"):
        BM25DocumentStore().write_documents([Document(content="ok"), "not a document"])
    with pytest.raises(ValueError, match="documents must be a list of Documents, got tuple"):
        BM25DocumentStore().write_documents((Document(content="ok"),))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lang": "klingon"}, "lang must be one of en, zh, character, ar, ca, .*; got 'klingon'"),
        (
            {"tokenizer": "os:system"},
            "tokenizer must be one of en, zh, character, whitespace, words, lucene or a Python function",
        ),
        ({"method": "bm26"}, "method must be one of lucene, robertson, atire, bm25l, bm25\\+; got 'bm26'"),
        ({"k1": -1}, "k1 must be a number >= 0; got -1"),
        ({"b": 1.5}, "b must be a number in \\[0, 1\\]; got 1.5"),
        ({"delta": "x"}, "delta must be a number >= 0; got 'x'"),
        ({"backend": "jax"}, "backend must be one of numpy, numba; got 'jax'"),
        ({"compaction_ratio": 0}, "compaction_ratio must be a number in \\(0, 1\\]; got 0"),
        ({"path": ""}, "path must be a non-empty directory path string or None"),
        ({"autosave": "yes"}, "autosave must be True or False; got 'yes'"),
    ],
)
def test_bad_parameters_are_refused_at_init(kwargs: dict, message: str) -> None:
    """Each bad parameter gets a ValueError naming it and its allowed range."""
    with pytest.raises(ValueError, match=message):
        BM25DocumentStore(**kwargs)


def test_to_dict_from_dict_round_trip(tmp_path) -> None:
    """Serialization keeps every setting; documents travel through the saved path, not the dict."""
    store = BM25DocumentStore(
        path=str(tmp_path),
        lang="zh",
        method="bm25+",
        k1=1.2,
        b=0.75,
        delta=1.0,
        backend="numba",
        compaction_ratio=0.5,
        document_store_path="/x/dense",
        autosave=False,
    )
    data = store.to_dict()
    assert data["type"] == "components.stores.bm25.document_store.BM25DocumentStore"
    assert BM25DocumentStore.from_dict(data).to_dict() == data
