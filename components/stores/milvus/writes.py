"""How the Milvus store writes: every document checked before the first insert, then Haystack's duplicate policies.

``MilvusWrites.write_documents`` turns every document into a row first (``records.to_rows``: ids, tenants, sparse
embeddings and meta keys are checked there, so a bad document anywhere in the batch writes nothing, however many
``index_chunk_size`` chunks the batch spans), then creates the collection on the first write (or checks the
existing one against the settings), and only then inserts, chunk by chunk.

Milvus does not enforce unique primary keys (an insert of a stored id adds a second row) and milvus-haystack
0.1.0 ignores SKIP and FAIL, so the store looks the ids up first and applies Haystack's policies itself
(``rows_to_write``): NONE/FAIL refuse an id that is stored or repeated in the batch (nothing is written), SKIP keeps
the stored document (and the first of repeated ones), OVERWRITE upserts (the last of repeated ids wins).
"""

import threading
from typing import Any

from haystack import Document, logging
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.stores.document_checks import check_document_list
from components.stores.milvus.calls import MilvusCalls
from components.stores.milvus.collection import check_collection, create_collection, where
from components.stores.milvus.connection import is_lite_engine
from components.stores.milvus.records import embedding_size, to_rows
from components.stores.milvus.settings import MilvusSettings

logger = logging.getLogger(__name__)


class MilvusWrites(MilvusCalls):
    """Mixin of ``MilvusDocumentStore``: ``write_documents``, the collection its first write creates, ``flush``.

    The stubs below are defined by ``MilvusDocumentStore`` itself or by ``UpstreamCompatibility`` (before this mixin
    in its bases), so they never shadow the real methods.
    """

    _lock: threading.RLock
    _merging_upsert: bool  # the engine merges an upsert onto the stored row (Milvus Lite): see clear_stale_meta

    def _exists(self) -> bool:
        raise NotImplementedError

    def _sync_upstream_state(self) -> None:
        raise NotImplementedError

    @property
    def bm25_analyzer_in_use(self) -> str:
        raise NotImplementedError

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        Write documents, with or without embeddings; the first write creates the collection.

        A new collection's vectors have the size of the first embeddings written, or ``embedding_dim``.

        :param policy: OVERWRITE (upsert), SKIP (keep what is stored), NONE or FAIL (error on an existing id).
        :returns: the number of documents written.
        :raises ValueError: naming the document with an embedding of another size, an id too long, a reserved
            meta key, a tenant (``partition_key_field``) or sparse embedding (``learned_sparse_field_name``) Milvus
            cannot take; or a first write with no embedding and no ``embedding_dim``. Nothing is written then.
        :raises DuplicateDocumentError: an id already stored (or twice in ``documents``) under NONE/FAIL.
        :raises MilvusCollectionError: the collection exists with another dimension, metric or fields, or was
            created before documents without an embedding could be stored and one has none.
        """
        check_document_list(documents)
        if not documents:
            return 0
        size = embedding_size(documents)
        with self._lock:
            exists = self._exists()
            dim = (size or self.dim or 0) if exists else self._new_dim(size)
            rows = to_rows(documents, self.settings, dim, self._flagged or not exists)  # checked before any change
            self._prepare_collection(dim)
            key, overwrite = self.settings.id_field_name, policy == DuplicatePolicy.OVERWRITE
            stored = set() if overwrite else {row[key] for row in self._stored([r[key] for r in rows], [key])}
            rows = rows_to_write(rows, policy, stored, self.settings, where(self.settings))
            if overwrite and self._merging_upsert:
                clear_stale_meta(rows, self._stored([r[key] for r in rows], ["$meta"]), self.settings)
            write = "upsert" if overwrite else "insert"
            chunk = self.settings.index_chunk_size
            for start in range(0, len(rows), chunk):
                self._call(
                    write, self.settings.collection_name, rows[start : start + chunk], timeout=self.settings.timeout
                )
            if len(rows) >= chunk:
                self.flush()
            return len(rows)

    def _new_dim(self, size: int | None) -> int:
        """The vector size of the collection the first write creates: the embeddings' size, or ``embedding_dim``."""
        setting = self.settings.embedding_dim
        if size is not None and setting is not None and size != setting:
            raise ValueError(f"the documents' embeddings have {size} values but embedding_dim is {setting}")
        dim = size or setting
        if dim is None:
            raise ValueError(
                f"{where(self.settings)} does not exist yet and no document has an embedding, so its vector size "
                f"is unknown: set embedding_dim (your embedder's size), or write embedded documents first"
            )
        return dim

    def _prepare_collection(self, dim: int) -> None:
        """Create the collection for ``dim``-dimensional vectors, or check that the existing one has them."""
        if self._exists():
            with self._errors("describe_collection"):
                check_collection(self.client, self.settings, dim)
            return
        with self._errors("create_collection"):
            create_collection(self.client, self.settings, dim)
        self.dim, self._flagged = dim, True
        self._sync_upstream_state()
        logger.info(
            "created {where} (BM25 analyzer: {analyzer})", where=where(self.settings), analyzer=self._analyzer()
        )
        if self.settings.num_partitions is not None and is_lite_engine(self.client):
            logger.warning(
                "{where}: Milvus Lite ignores num_partitions={n} and hashes the tenants into its own 16 partitions "
                "(a Milvus server makes {n})",
                where=where(self.settings),
                n=self.settings.num_partitions,
            )

    def _analyzer(self) -> str:
        return self.bm25_analyzer_in_use if self.settings.bm25 else "none"

    def flush(self) -> None:
        """Seal what was inserted so that searches run on indexed segments (call after bulk loads)."""
        with self._lock:
            if self._exists():
                self._call("flush", self.settings.collection_name, timeout=self.settings.timeout)


def rows_to_write(
    rows: list[dict[str, Any]], policy: DuplicatePolicy, stored: set[str], settings: MilvusSettings, where: str
) -> list[dict[str, Any]]:
    """
    The rows to send under ``policy``, given the ``stored`` ids among them (not needed for OVERWRITE).

    :raises DuplicateDocumentError: under NONE/FAIL, naming the first id stored or repeated.
    """
    key = settings.id_field_name
    if policy == DuplicatePolicy.OVERWRITE:
        return list({row[key]: row for row in rows}.values())
    if policy == DuplicatePolicy.SKIP:
        kept: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row[key] not in stored:
                kept.setdefault(row[key], row)
        return list(kept.values())
    seen: set[str] = set()
    for row in rows:
        if row[key] in stored or row[key] in seen:
            raise DuplicateDocumentError(f"ID {row[key]!r} already exists in {where}")
        seen.add(row[key])
    return rows


def clear_stale_meta(rows: list[dict[str, Any]], stored: list[dict[str, Any]], settings: MilvusSettings) -> None:
    """
    Set to None every meta key a stored row has and its replacement lacks, so that an upsert replaces the meta.

    Upstream (milvus-lite 3.2, local and ``milvus-lite server``): ``upsert`` merges the new row onto the
    stored one, so meta keys the new document no longer has would survive an OVERWRITE; a Milvus server
    replaces the whole row. A null dynamic field reads back as absent (``to_document`` drops None values)
    and matches no filter, like a missing key.
    """
    key = settings.id_field_name
    old = {row[key]: row for row in stored}
    for row in rows:
        for name in old.get(row[key], {}):
            if name not in row:
                row[name] = None
