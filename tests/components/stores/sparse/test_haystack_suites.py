"""SparseDocumentStore against Haystack's DocumentStore test suites: in memory, saved, and saved beside a FAISS store.

Haystack's suites write plain Documents; the sparse store refuses a document without a ``sparse_embedding`` (its
docstring: a sparse document embedder runs before the writer). So the store under test is ``EmbeddedWrites``, the
real store whose writes first give each document without a vector one derived from its words, as that embedder
would, and documents are compared with those vectors: the suites then also check that every document comes back
with the vector it was written with. A saved store is reopened after each test and must hold the same. Haystack
skips its ``recreate_index`` tests itself: ``delete_all_documents`` takes no such parameter (nor do the FAISS and
BM25 stores': there is no index schema to recreate)."""

import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.testing.document_store import (
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    DocumentStoreBaseExtendedTests,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldUniqueValuesTest,
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

from components.stores.faiss.document_store import FAISSDocumentStore
from components.stores.sparse.document_store import SparseDocumentStore

VOCABULARY = 30_522  # a BERT word-piece vocabulary, as SPLADE models have


def word_vector(text: str | None) -> SparseEmbedding:
    """A SPLADE-like vector of TEXT: one term per distinct word (crc32 into the vocabulary), weighted by its count.

    Whole-number weights are exact in float32, where the index keeps them; no text gives an empty vector (valid)."""
    counts: dict[int, float] = {}
    for word in (text or "").lower().split():
        term = zlib.crc32(word.encode()) % VOCABULARY
        counts[term] = counts.get(term, 0.0) + 1.0
    terms = sorted(counts)
    return SparseEmbedding(indices=terms, values=[counts[t] for t in terms])


def embedded(document: Document) -> Document:
    """DOCUMENT as a sparse document embedder hands it on: with a ``sparse_embedding`` (its own, if it has one).

    Anything but a Document passes unchanged, for the store's own check to refuse."""
    if not isinstance(document, Document) or document.sparse_embedding is not None:
        return document
    return replace(document, sparse_embedding=word_vector(document.content))


class EmbeddedWrites(SparseDocumentStore):
    """The real store, its writes preceded by ``embedded`` (the embedder of a user's indexing pipeline)."""

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Embed, then write through the store (its checks, policies and saves unchanged)."""
        return super().write_documents([embedded(d) for d in documents], policy)


def as_reopened(document: Document, shared: bool) -> Document:
    """DOCUMENT as a reopened store gives it back: read from the FAISS store beside it (SHARED), without its dense
    ``embedding``, which lives in the FAISS index, not in the documents the sparse store reads (its docstring)."""
    return replace(document, embedding=None) if shared else document


def suite_store(kind: str, tmp_path: Path) -> Iterator[EmbeddedWrites]:
    """
    A store in memory; one saved after every mutation (autosave); or one saved so, reading its documents from a
    FAISS store beside it (``document_store_path``, as ``needle index`` builds it), which another writer fills.

    After the test a fresh store reopens a saved one and must hand back the same documents and vectors (for
    ``shared``, once the test's documents are written, without vectors, into the FAISS store, as the dense
    part of an index holds the same corpus).
    """
    path = None if kind == "memory" else str(tmp_path / "sparse")
    dense = str(tmp_path / "dense") if kind == "shared" else None
    store = EmbeddedWrites(path=path, document_store_path=dense)
    yield store
    if path is None:
        return
    held = store.filter_documents()
    if dense is not None and held:
        FAISSDocumentStore(path=dense).write_documents([replace(d, sparse_embedding=None) for d in held])
    reopened = SparseDocumentStore(path=path).filter_documents()
    assert reopened == [as_reopened(d, dense is not None) for d in held]


def assert_same(received: list[Document], expected: list[Document]) -> None:
    """RECEIVED are EXPECTED as written: in order, each with its sparse vector."""
    assert received == [embedded(d) for d in expected]


class TestSparseDocumentStoreProtocol(
    DocumentStoreBaseExtendedTests,
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldUniqueValuesTest,
):
    """Every sync suite the FAISS and BM25 stores run, in memory, saved, and saved beside a FAISS store."""

    @pytest.fixture(params=["memory", "saved", "shared"])
    def document_store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EmbeddedWrites]:
        yield from suite_store(request.param, tmp_path)

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        assert_same(received, expected)

    def test_write_documents(self, document_store: EmbeddedWrites) -> None:
        """The default policy (NONE) fails on a stored id, like FAIL, and writes nothing of that batch."""
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError, match=doc.id):
            document_store.write_documents([Document(content="another doc"), doc])
        assert_same(document_store.filter_documents(), [doc])


class TestSparseDocumentStoreAsyncProtocol(
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
    """The async twins (what DocumentWriter and Hayhooks call) against Haystack's async suites, both variants."""

    @pytest.fixture(params=["memory", "saved"])  # the twins run the sync methods: the shared layout adds nothing
    def document_store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EmbeddedWrites]:
        yield from suite_store(request.param, tmp_path)

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        assert_same(received, expected)

    async def test_write_documents_async(self, document_store: EmbeddedWrites) -> None:
        """A write is found by the async sparse search; a duplicate fails as the sync call does."""
        doc = Document(content="saturn rings of ice")
        assert await document_store.write_documents_async([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            await document_store.write_documents_async([doc])
        hits = await document_store.sparse_embedding_retrieval_async(word_vector("ice rings"))
        assert [(d.id, d.score) for d in hits] == [(doc.id, 2.0)]
