"""FAISSDocumentStore against Haystack's DocumentStore test suites, in memory and persisted to a directory."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
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

from components.stores import FAISSDocumentStore


def _as_stored(document: Document) -> Document:
    """The store keeps embeddings as float32: what a document looks like after a round trip through it."""
    if document.embedding is None:
        return document
    return replace(document, embedding=np.asarray(document.embedding, dtype=np.float32).tolist())


def _store(kind: str, tmp_path: Path) -> FAISSDocumentStore:
    """A store in memory, or one persisted with autosave (each mutation writes a generation)."""
    return FAISSDocumentStore(path=str(tmp_path / "store") if kind == "directory" else None)


class TestFAISSDocumentStoreProtocol(
    DocumentStoreBaseExtendedTests,
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldUniqueValuesTest,
):
    """Every suite runs twice: in memory, and persisted with autosave."""

    @pytest.fixture(params=["memory", "directory"])
    def document_store(self, request: pytest.FixtureRequest, tmp_path: Path) -> FAISSDocumentStore:
        return _store(request.param, tmp_path)

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        assert received == [_as_stored(document) for document in expected]

    def test_write_documents(self, document_store: FAISSDocumentStore) -> None:
        """The default policy (NONE) fails on a duplicate, like FAIL, and writes nothing of that batch."""
        doc = Document(content="test doc", embedding=[0.5, 0.25])
        assert document_store.write_documents([doc]) == 1
        other = Document(content="another doc", embedding=[1.0, 0.0])
        with pytest.raises(DuplicateDocumentError, match=doc.id):
            document_store.write_documents([other, doc])
        assert document_store.filter_documents() == [doc]


class TestFAISSDocumentStoreAsyncProtocol(
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

    @pytest.fixture(params=["memory", "directory"])
    def document_store(self, request: pytest.FixtureRequest, tmp_path: Path) -> FAISSDocumentStore:
        return _store(request.param, tmp_path)

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        assert received == [_as_stored(document) for document in expected]

    async def test_write_documents_async(self, document_store: FAISSDocumentStore) -> None:
        doc = Document(content="test doc", embedding=[0.5, 0.25])
        assert await document_store.write_documents_async([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            await document_store.write_documents_async([doc])
        assert await document_store.search_async(np.array([[1.0, 0.0]], np.float32), 1) == [
            [replace(doc, score=0.5, meta={"retrieval_type": "dense"}, embedding=None)]
        ]
