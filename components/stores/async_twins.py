"""The ``*_async`` twins of a document store's methods, for AsyncPipeline, DocumentWriter and Hayhooks.

FAISS, bm25s and SQLite calls block, so each twin runs its synchronous method in a worker thread (the store's
lock serialises them) and the event loop keeps serving other requests meanwhile. ``DocumentStoreAsyncTwins``
covers Haystack's DocumentStore protocol; each store adds the twins of its own search methods with ``twin``.
"""

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

P = ParamSpec("P")
R = TypeVar("R")


def twin(method: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """An async method with ``method``'s parameters and result, running it in a worker thread."""

    @functools.wraps(method)
    async def run_in_thread(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, *args, **kwargs)

    run_in_thread.__doc__ = f"Async ``{method.__name__}``: the same call, run in a worker thread."
    return run_in_thread


class DocumentStoreAsyncTwins:
    """Mixin: async versions, same parameters and results, of the DocumentStore protocol methods."""

    async def count_documents_async(self) -> int:
        """Async ``count_documents``."""
        return await asyncio.to_thread(self.count_documents)  # type: ignore[attr-defined]

    async def count_documents_by_filter_async(self, filters: dict[str, Any]) -> int:
        """Async ``count_documents_by_filter``."""
        return await asyncio.to_thread(self.count_documents_by_filter, filters)  # type: ignore[attr-defined]

    async def filter_documents_async(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Async ``filter_documents``."""
        return await asyncio.to_thread(self.filter_documents, filters)  # type: ignore[attr-defined]

    async def get_documents_by_id_async(self, ids: list[str]) -> list[Document]:
        """Async ``get_documents_by_id``."""
        return await asyncio.to_thread(self.get_documents_by_id, ids)  # type: ignore[attr-defined]

    async def write_documents_async(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Async ``write_documents``."""
        return await asyncio.to_thread(self.write_documents, documents, policy)  # type: ignore[attr-defined]

    async def delete_documents_async(self, document_ids: list[str]) -> None:
        """Async ``delete_documents``."""
        await asyncio.to_thread(self.delete_documents, document_ids)  # type: ignore[attr-defined]

    async def delete_by_filter_async(self, filters: dict[str, Any]) -> int:
        """Async ``delete_by_filter``."""
        return await asyncio.to_thread(self.delete_by_filter, filters)  # type: ignore[attr-defined]

    async def update_by_filter_async(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Async ``update_by_filter``."""
        return await asyncio.to_thread(self.update_by_filter, filters, meta)  # type: ignore[attr-defined]

    async def delete_all_documents_async(self) -> None:
        """Async ``delete_all_documents``."""
        await asyncio.to_thread(self.delete_all_documents)  # type: ignore[attr-defined]
