"""Documents handed back a page at a time under a filter, in memory that does not grow with the corpus.

``filter_documents`` returns every match at once: at a million documents that is gigabytes of Python objects.
``DocumentPages`` gives every store two ways through the same matches, in ``filter_documents``' order and with
its filter semantics (and filter errors):

- ``iter_document_pages(filters, page_size)``: an iterator of pages (lists of at most ``page_size`` documents),
  for a job that walks the whole corpus (an export, a re-embedding, a migration);
- ``filter_documents_page(filters, offset, limit)``: one page by position, for a UI or an API that shows page N.
  It walks the matches before ``offset`` without keeping them, so a deep page costs time, never memory.

Each store reads its own way (``_document_pages``): the FAISS store a page of its SQLite table at a time, the BM25
store a page of ids of the index as it was when the walk began (documents deleted since are skipped, ids
first written since are not shown, a document re-written since is shown as it is now), Milvus through its query
iterator (closed when the walk ends or its iterator is dropped). A page holds copies: changing a document
changes nothing stored. The walk holds no lock between pages, so writes and searches go on while it runs.
"""

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

from haystack import Document

from components.checks import check_filters, check_int

MAX_PAGE = 100_000
"""The largest page, in documents: a page is held whole, so this bounds what one holds (and a typo's cost)."""
WALK_PAGE = 1000
"""The page ``filter_documents_page`` walks with when its ``limit`` is smaller: few reads, little memory."""
MAX_OFFSET = 2**62
"""The largest ``offset`` (any count of documents a store can hold)."""


class DocumentPages:
    """Mixin: paged reads over a store's ``_document_pages`` (which yields pages of matching copies)."""

    def _document_pages(self, filters: dict[str, Any] | None, page_size: int) -> Iterator[list[Document]]:
        raise NotImplementedError  # pragma: no cover - every store defines it

    def iter_document_pages(
        self, filters: dict[str, Any] | None = None, page_size: int = 1000
    ) -> Iterator[list[Document]]:
        """
        The documents matching ``filters``, as ``filter_documents`` orders them, a page at a time.

        :param filters: Haystack filters; None or ``{}`` for every document.
        :param page_size: Documents per page, 1 to 100,000; the last page may be shorter, and no page is empty.
        :returns: An iterator of pages; memory holds one page (and the store's own cursor), whatever the corpus.
        :raises ValueError: ``page_size`` out of range (raised here, before the first page is read).
        :raises FilterError: A malformed filter, naming its field and operator.
        """
        check_int("page_size", page_size, 1, MAX_PAGE)
        check_filters(filters)
        return self._nonempty(self._document_pages(filters or None, page_size), page_size)

    def filter_documents_page(
        self, filters: dict[str, Any] | None = None, offset: int = 0, limit: int = 100
    ) -> list[Document]:
        """
        The matches of ``filters`` from position ``offset`` (0 is the first), at most ``limit`` of them.

        The positions are ``filter_documents``' order: with no write in between, pages 0, ``limit``,
        ``2 * limit``, ... together hold each match exactly once. A page past the end is empty.

        :param filters: Haystack filters; None or ``{}`` for every document.
        :param offset: Matches to skip, 0 or more.
        :param limit: Most documents returned, 1 to 100,000.
        :raises ValueError: ``offset`` or ``limit`` out of range, naming it.
        :raises FilterError: A malformed filter, naming its field and operator.
        """
        check_int("offset", offset, 0, MAX_OFFSET)
        check_int("limit", limit, 1, MAX_PAGE)
        documents = itertools.chain.from_iterable(self.iter_document_pages(filters, max(limit, WALK_PAGE)))
        return list(itertools.islice(documents, offset, offset + limit))

    async def filter_documents_page_async(
        self, filters: dict[str, Any] | None = None, offset: int = 0, limit: int = 100
    ) -> list[Document]:
        """Async ``filter_documents_page``: the same call, run in a worker thread."""
        return await asyncio.to_thread(self.filter_documents_page, filters, offset, limit)

    @staticmethod
    def _nonempty(pages: Iterator[list[Document]], page_size: int) -> Iterator[list[Document]]:
        """PAGES regrouped into pages of exactly ``page_size`` (the last may be shorter), none empty: a store's
        filter may leave a page it read short or empty."""
        documents = itertools.chain.from_iterable(pages)
        while page := list(itertools.islice(documents, page_size)):
            yield page
