"""The Milvus store's operations by id and by filter: the rest of Haystack's DocumentStore protocol.

``DocumentStoreAsyncTwins`` gives every store here ``count_documents_by_filter_async``,
``get_documents_by_id_async``, ``delete_by_filter_async``, ``update_by_filter_async`` and
``delete_all_documents_async``; these are the synchronous methods they run (milvus-haystack 0.1.0 has none of
them). Filters use the store's one translation (``filters.translate``), so they match exactly what
``filter_documents`` returns; documents come back whole (content, meta, embedding).
"""

import threading
from typing import Any

from haystack import Document

from components.stores.async_twins import twin
from components.stores.document_checks import check_meta_storable
from components.stores.milvus.calls import MilvusCalls
from components.stores.milvus.collection import EMBEDDED_FIELD
from components.stores.milvus.filters import MilvusFilter
from components.stores.milvus.records import check_tenant, not_meta, stored_fields, to_document


class MilvusFilterOperations(MilvusCalls):
    """Mixin of ``MilvusDocumentStore``: count, read, delete and update by id or by Haystack filters."""

    _lock: threading.RLock

    def _exists(self) -> bool:
        raise NotImplementedError

    def _selected(self, filters: dict[str, Any] | None) -> tuple[MilvusFilter, bool]:
        """The translated ``filters`` and whether the collection exists (connecting first: both read the schema)."""
        exists = self._exists()
        return self._filter(filters), exists

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """How many documents match ``filters`` (Milvus counts; an inexact filter counts what the matcher keeps)."""
        with self._lock:
            where, exists = self._selected(filters)
            if where.expression is None or not exists:
                return 0
            if not where.exact:
                return len(self._matching(where, vectors=False))
            result = self._call(
                "query", self.settings.collection_name, filter=where.expression, output_fields=["count(*)"]
            )
            return int(result[0]["count(*)"])

    def _matching_ids(self, filters: dict[str, Any] | None) -> list[str]:
        where, exists = self._selected(filters)
        return [document.id for document in self._matching(where, vectors=False)] if exists else []

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """The stored documents among ``ids`` (unknown ids are left out)."""
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ValueError("ids must be a list of strings")
        with self._lock:
            if not ids or not self._exists():
                return []
            fields = stored_fields(self.settings, self._flagged)
            return [to_document(row, self.settings) for row in self._stored(ids, fields)]

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching ``filters``; returns how many were deleted."""
        with self._lock:
            ids = self._matching_ids(filters)
            self._delete_ids(ids)
            return len(ids)

    def _prepare_collection(self, dim: int) -> None:
        raise NotImplementedError

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """
        Delete every document.

        :param recreate_index: False keeps the collection (its schema, indexes and settings); True drops it and
            creates it again from the settings with the same vector size, in the current schema (a collection
            created before documents without embeddings could be stored gains the embedding flag).
        """
        with self._lock:
            if not recreate_index:
                self._delete_ids(self._matching_ids(None))
                return
            if not self._exists() or self.dim is None:
                return
            dim, self.dim = self.dim, None
            self._call("drop_collection", self.settings.collection_name, timeout=self.settings.timeout)
            self._prepare_collection(dim)

    delete_all_documents_async = twin(delete_all_documents)

    def _delete_ids(self, ids: list[str]) -> None:
        size = self.settings.index_chunk_size
        for start in range(0, len(ids), size):
            self._call(
                "delete", self.settings.collection_name, ids=ids[start : start + size], timeout=self.settings.timeout
            )

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """
        Merge ``meta`` into the meta of every document matching ``filters``; returns how many were updated.

        The rows are read with their vectors (and embedding flags) and upserted whole, so content and embeddings
        stay as they were.
        """
        check_meta_storable(meta)
        clashes = {*not_meta(self.settings), EMBEDDED_FIELD} & set(meta)
        if clashes:
            raise ValueError(f"meta key(s) {sorted(clashes)} would overwrite the collection's fields")
        tenant = self.settings.partition_key_field
        if tenant is not None and tenant in meta:
            check_tenant(meta[tenant], tenant, "update_by_filter")
        with self._lock:
            ids = self._matching_ids(filters)
            rows = [{**row, **meta} for row in self._stored(ids, stored_fields(self.settings, self._flagged))]
            size = self.settings.index_chunk_size
            for start in range(0, len(rows), size):
                self._call(
                    "upsert", self.settings.collection_name, rows[start : start + size], timeout=self.settings.timeout
                )
            return len(rows)
