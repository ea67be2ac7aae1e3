"""The Milvus store's operations by id and by filter: the rest of Haystack's DocumentStore protocol.

``DocumentStoreAsyncTwins`` gives every store here ``count_documents_by_filter_async``,
``get_documents_by_id_async``, ``delete_by_filter_async``, ``update_by_filter_async`` and
``delete_all_documents_async``; these are the synchronous methods they run (milvus-haystack 0.1.0 has none of
them). Filters use the store's one translation (``records.milvus_filter``), so they match exactly what
``filter_documents`` returns.
"""

import threading
from typing import Any

from haystack import Document

from components.stores.document_checks import check_meta_storable
from components.stores.milvus.calls import MilvusCalls
from components.stores.milvus.records import milvus_filter, output_fields, to_document


class MilvusFilterOperations(MilvusCalls):
    """Mixin of ``MilvusDocumentStore``: count, read, delete and update by id or by Haystack filters."""

    _lock: threading.RLock

    def _exists(self) -> bool:
        raise NotImplementedError

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        raise NotImplementedError

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """How many documents match ``filters``."""
        expression = milvus_filter(filters, self.settings)
        with self._lock:
            if expression is None or not self._exists():
                return 0
            result = self._call("query", self.settings.collection_name, filter=expression, output_fields=["count(*)"])
            return int(result[0]["count(*)"])

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """The stored documents among ``ids`` (unknown ids are left out)."""
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValueError("ids must be a list of strings")
        with self._lock:
            if not ids or not self._exists():
                return []
            return [to_document(row, self.settings) for row in self._stored(ids, output_fields(self.settings))]

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching ``filters``; returns how many were deleted."""
        with self._lock:
            ids = [document.id for document in self.filter_documents(filters)]
            self._delete_ids(ids)
            return len(ids)

    def delete_all_documents(self) -> None:
        """Delete every document and keep the collection (its schema, indexes and settings)."""
        with self._lock:
            self._delete_ids([document.id for document in self.filter_documents(None)])

    def _delete_ids(self, ids: list[str]) -> None:
        size = self.settings.index_chunk_size
        for start in range(0, len(ids), size):
            self._call(
                "delete", self.settings.collection_name, ids=ids[start : start + size], timeout=self.settings.timeout
            )

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """
        Merge ``meta`` into the meta of every document matching ``filters``; returns how many were updated.

        The rows are read with their vectors and upserted whole, so content and embeddings stay as they were.
        """
        check_meta_storable(meta)
        reserved = {self.settings.id_field_name, self.settings.text_field_name, self.settings.vector_field_name}
        clashes = reserved | {self.settings.sparse_field_name}
        if clashes & set(meta):
            raise ValueError(f"meta key(s) {sorted(clashes & set(meta))} would overwrite the collection's fields")
        with self._lock:
            ids = [document.id for document in self.filter_documents(filters)]
            fields = [*output_fields(self.settings), self.settings.vector_field_name]
            rows = [{**row, **meta} for row in self._stored(ids, fields)]
            size = self.settings.index_chunk_size
            for start in range(0, len(rows), size):
                self._call(
                    "upsert", self.settings.collection_name, rows[start : start + size], timeout=self.settings.timeout
                )
            return len(rows)
