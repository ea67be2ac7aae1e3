"""A bounded memory of decoded documents, for stores that read documents from disk when a search returns them.

Reading and decoding one saved document (a JSON line or SQLite row) costs 5-50 µs, more than scoring a small
BM25 query, and queries keep returning the same passages: the last documents decoded stay in memory, the oldest
dropped first, so memory stays bounded whatever the corpus: at most ``size`` documents, and at most ``text_budget``
characters of content among them (long passages would otherwise make ``size`` documents weigh gigabytes). The
documents are shared: callers copy one before changing it (the stores return copies), and the saved generation
they came from never changes (a writable table ``forget``s what it changes).

Keys are what the reader looks documents up by: ids (the BM25 store's shared reader) or rows (the FAISS store's
table, which also finds kept documents by id through ``get_by_id``).
"""

import itertools
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from haystack import Document

CACHE_SIZE = 100_000  # decoded documents kept per reader
TEXT_BUDGET = 64_000_000  # characters of content kept per reader (~100-150 MB decoded, with the documents' own)
K = Hashable  # an id (str) or a row (int): whatever the reader looks documents up by


class RecentDocuments:
    """The last documents decoded, by key (and by id), within ``size`` documents and ``text_budget`` characters."""

    def __init__(self, size: int = CACHE_SIZE, text_budget: int = TEXT_BUDGET) -> None:
        """Start empty; ``size`` >= 1 documents are kept at most, and no more content than ``text_budget``
        characters (the newest document is always kept)."""
        self.size = size
        self.text_budget = text_budget
        self._documents: dict[K, Document] = {}
        self._by_id: dict[str, Document] = {}
        self._text = 0

    def get(self, key: K) -> Document | None:
        """The document under this key when it is still kept, else None."""
        return self._documents.get(key)

    def get_many(self, keys: Iterable[K]) -> list[Document | None]:
        """``get`` for each key, in order."""
        return list(map(self._documents.get, keys))

    def get_by_id(self, ids: Iterable[str]) -> list[Document | None]:
        """The kept document with each id (None where it is not kept), in order."""
        return list(map(self._by_id.get, ids))

    def remember(self, documents: Mapping[Any, Document]) -> None:
        """Keep these newly decoded documents, dropping the oldest beyond ``size`` or ``text_budget``."""
        self.forget([key for key in documents if key in self._documents])
        kept = self._documents
        kept.update(documents)
        for document in documents.values():
            self._by_id[document.id] = document
            self._text += len(document.content or "")
        excess = max(0, len(kept) - self.size)
        if self._text > self.text_budget:
            excess = max(excess, self._over_budget())
        self.forget(list(itertools.islice(kept, max(0, min(excess, len(kept) - 1)))))

    def forget(self, keys: Iterable[K]) -> None:
        """Drop the documents under these keys (those kept), e.g. rows a writer changes."""
        for key in keys:
            document = self._documents.pop(key, None)
            if document is not None:
                self._text -= len(document.content or "")
                if self._by_id.get(document.id) is document:
                    del self._by_id[document.id]

    def clear(self) -> None:
        """Drop every document."""
        self._documents.clear()
        self._by_id.clear()
        self._text = 0

    def _over_budget(self) -> int:
        """How many of the oldest documents must go for the rest to fit ``text_budget``."""
        surplus, count = self._text - self.text_budget, 0
        for document in self._documents.values():
            if surplus <= 0:
                break
            surplus -= len(document.content or "")
            count += 1
        return count
