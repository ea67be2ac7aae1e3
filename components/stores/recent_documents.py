"""A bounded memory of decoded documents, for stores that read documents from disk when a search returns them.

Reading and decoding one saved document (a JSON line or SQLite row) costs 20-50 µs, more than scoring a small
BM25 query, and queries keep returning the same passages: the last ``size`` documents decoded stay in memory,
the oldest dropped first, so memory stays bounded whatever the corpus. The documents are shared: callers copy
one before changing it (the stores return copies), and the saved generation they came from never changes.
"""

import itertools

from haystack import Document

CACHE_SIZE = 100_000  # decoded documents kept per reader


class RecentDocuments:
    """The last ``size`` documents decoded, by id."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        """Start empty; ``size`` >= 1 documents are kept at most."""
        self.size = size
        self._documents: dict[str, Document] = {}

    def get(self, doc_id: str) -> Document | None:
        """The document with this id when it is still kept, else None."""
        return self._documents.get(doc_id)

    def get_many(self, ids: list[str]) -> list[Document | None]:
        """``get`` for each id, in order."""
        return list(map(self._documents.get, ids))

    def remember(self, documents: dict[str, Document]) -> None:
        """Keep these newly decoded documents, dropping the oldest beyond ``size``."""
        kept = self._documents
        kept.update(documents)
        for doc_id in list(itertools.islice(kept, max(0, len(kept) - self.size))):
            del kept[doc_id]
