"""The ``*_async`` twins of FAISSDocumentStore's methods, for AsyncPipeline and Hayhooks.

FAISS and SQLite calls block, so each twin runs its synchronous method in a worker thread (the store's
lock serialises them) and the event loop keeps serving other requests meanwhile. Haystack's DocumentWriter
needs ``write_documents_async`` to run in an async pipeline at all.
"""

import asyncio
from typing import Any

import numpy as np
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy


class FAISSAsyncTwins:
    """Mixin: async versions, same parameters and results, of the store's public methods."""

    async def count_documents_async(self) -> int:
        """Async ``count_documents``."""
        return await asyncio.to_thread(self.count_documents)

    async def count_documents_by_filter_async(self, filters: dict[str, Any]) -> int:
        """Async ``count_documents_by_filter``."""
        return await asyncio.to_thread(self.count_documents_by_filter, filters)

    async def filter_documents_async(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Async ``filter_documents``."""
        return await asyncio.to_thread(self.filter_documents, filters)

    async def write_documents_async(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Async ``write_documents``."""
        return await asyncio.to_thread(self.write_documents, documents, policy)

    async def delete_documents_async(self, document_ids: list[str]) -> None:
        """Async ``delete_documents``."""
        await asyncio.to_thread(self.delete_documents, document_ids)

    async def delete_by_filter_async(self, filters: dict[str, Any]) -> int:
        """Async ``delete_by_filter``."""
        return await asyncio.to_thread(self.delete_by_filter, filters)

    async def update_by_filter_async(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Async ``update_by_filter``."""
        return await asyncio.to_thread(self.update_by_filter, filters, meta)

    async def delete_all_documents_async(self) -> None:
        """Async ``delete_all_documents``."""
        await asyncio.to_thread(self.delete_all_documents)

    async def search_async(
        self,
        query_embeddings: np.ndarray,
        top_k: int,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
    ) -> list[list[Document]]:
        """Async ``search``."""
        return await asyncio.to_thread(self.search, query_embeddings, top_k, filters, return_embedding)
