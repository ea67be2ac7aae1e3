"""How the Milvus store calls pymilvus: one-line errors, and the two failures it recovers from by itself.

Every client call goes through ``_call``. A connection closed by the server while idle (gRPC GOAWAY) is
retried once; a collection found released (a restarted server loads nothing) is loaded and the call made once
more. Anything else becomes one line naming the collection and URI: the connection lost
(``MilvusConnectionError``), the collection dropped (``MilvusCollectionError``), or what Milvus said.
``_stored`` reads rows by id in chunks; ``_matching`` reads the documents a Haystack filter selects (``_matching_pages``
a page at a time).
"""

import contextlib
from collections.abc import Iterator
from typing import Any

from haystack import Document
from haystack.document_stores.errors import DocumentStoreError
from pymilvus import MilvusClient
from pymilvus.client.constants import MAX_BATCH_SIZE
from pymilvus.exceptions import MilvusException

from components.stores.milvus.collection import ensure_loaded, is_missing, is_released, missing, where
from components.stores.milvus.connection import call_failure, sent_away
from components.stores.milvus.filters import MilvusFilter, translate
from components.stores.milvus.records import output_fields, stored_fields, to_document
from components.stores.milvus.settings import MilvusSettings

QUERY_BATCH = 1000


class MilvusCalls:
    """Mixin of ``MilvusDocumentStore``: ``_call``, ``_errors`` and ``_stored`` over its ``client`` and ``settings``."""

    settings: MilvusSettings
    dim: int | None
    _flagged: bool  # the collection has the embedding flag (see collection.EMBEDDED_FIELD)
    _collection_exists: bool

    @property
    def client(self) -> MilvusClient:
        raise NotImplementedError

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """
        One client call with one-line errors; a collection found released is loaded and the call made again.

        A Milvus server (``milvus-lite server`` too) restarts with every collection released, and pymilvus
        reconnects but does not load it: the call fails with "collection not loaded" (code 101) until someone
        loads it. The store does that once, so searches keep working across a server restart.
        """
        for attempt in (1, 2):
            client = self.client
            try:
                return getattr(client, method)(*args, **kwargs)
            except MilvusException as error:
                if attempt == 1 and sent_away(error):  # see connection._connect: gRPC reconnects on the retry
                    continue
                if attempt == 1 and is_released(error):
                    self._reload(error)
                    continue
                raise self._failure(method, error) from error
        raise AssertionError("unreachable")  # pragma: no cover

    def _reload(self, cause: MilvusException) -> None:
        with self._errors("load_collection"):
            ensure_loaded(self.client, self.settings)

    def _failure(self, method: str, error: MilvusException) -> DocumentStoreError:
        """The one-line error for a failed call: Milvus gone, the collection dropped, or what Milvus said."""
        lost = call_failure(self.settings, error)
        if lost is not None:
            return lost
        if is_missing(error):
            self.dim = None  # dropped behind our back: the next write creates it again
            self._collection_exists = False
            return missing(self.settings)
        message = " ".join(str(getattr(error, "message", "") or error).split())
        return DocumentStoreError(f"{where(self.settings)}: Milvus refused {method}: {message}")

    @contextlib.contextmanager
    def _errors(self, method: str) -> Iterator[None]:
        """Turn pymilvus's errors inside the block into the store's one-line errors."""
        try:
            yield
        except MilvusException as error:
            raise self._failure(method, error) from error

    def _stored(self, ids: list[str], fields: list[str]) -> list[dict[str, Any]]:
        """The stored rows among ``ids`` with ``fields`` (queried in chunks of ``index_chunk_size``)."""
        found: list[dict[str, Any]] = []
        size = self.settings.index_chunk_size
        for start in range(0, len(ids), size):
            found += self._call(
                "query",
                self.settings.collection_name,
                ids=ids[start : start + size],
                output_fields=fields,
                timeout=self.settings.timeout,
            )
        return found

    def _filter(self, filters: dict[str, Any] | None) -> MilvusFilter:
        """Haystack ``filters`` translated for this collection (call after connecting: it reads the schema)."""
        return translate(filters, self.settings, self._flagged)

    def _matching(self, where: MilvusFilter, vectors: bool) -> list[Document]:
        """
        Every stored document ``where`` selects (not capped at Milvus's 16,384 query limit), with embeddings if
        ``vectors``: Milvus's expression, then Haystack's matcher when the expression only narrows.

        The caller has checked that the collection exists.
        """
        return [document for page in self._matching_pages(where, vectors, QUERY_BATCH) for document in page]

    def _matching_pages(self, where: MilvusFilter, vectors: bool, page_size: int) -> Iterator[list[Document]]:
        """``_matching``'s documents a page at a time through Milvus's query iterator (``page_size`` rows read
        per page, at most the 16,384 Milvus allows; the matcher may keep fewer)."""
        if where.expression is None:
            return
        fields = (
            stored_fields(self.settings, self._flagged) if vectors or where.vectors else output_fields(self.settings)
        )
        iterator = self._call(
            "query_iterator",
            self.settings.collection_name,
            batch_size=min(page_size, MAX_BATCH_SIZE),
            filter=where.expression,
            output_fields=fields,
            timeout=self.settings.timeout,
        )
        try:
            while batch := self._next_batch(iterator):
                found = (to_document(entity, self.settings) for entity in batch)
                yield [document for document in found if where.keeps(document)]
        finally:
            iterator.close()

    def _next_batch(self, iterator: Any) -> list[dict[str, Any]]:
        """The query iterator's next rows, a failure as one line naming the collection."""
        try:
            batch: list[dict[str, Any]] = iterator.next()
        except MilvusException as error:
            raise self._failure("query_iterator", error) from error
        return batch
