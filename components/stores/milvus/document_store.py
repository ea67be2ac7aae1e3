"""MilvusDocumentStore: milvus-haystack's store with the seed's schema, lazy connection, batch and async search.

Built on ``milvus_haystack.MilvusDocumentStore`` 0.1.0, adding what it lacks (each difference is commented
where it is handled):

- a light ``__init__`` of JSON-able settings; upstream connects in ``__init__``, so loading a YAML pipeline
  opened (and for Milvus Lite, locked) the database. Here the connection opens on first use or ``warm_up``;
- the seed's schema and defaults: ``metric_type`` IP (upstream: L2), ``id_max_length``/``text_max_length``
  (upstream: 65535 for both, and over-long text fails the insert), an analysed text field with Milvus's BM25
  function, inserts in ``index_chunk_size`` chunks;
- batch search (nq > 1 in one Milvus call) for dense, BM25 and Milvus hybrid (RRF or weighted), scores
  higher-is-better with ``meta["retrieval_type"]``, and ``*_async`` twins;
- duplicate policies SKIP and FAIL (upstream inserts duplicates under NONE: Milvus does not enforce unique
  primary keys), ``to_dict``/``from_dict`` that never import a name read from the data (upstream
  ``from_dict`` imports any module a serialized ``builtin_function`` names), one-line errors for an
  unreachable URI, a refused token, a locked Milvus Lite database, a missing or mismatched collection;
- ``close`` unlocks a Milvus Lite database, a restarted server needs no reload by the user, and an OVERWRITE
  replaces the meta on Milvus Lite too (see ``connection``, ``calls`` and ``writes``);
- Haystack's DocumentStore contract: documents without an embedding are stored (``collection``), never returned
  by dense search; ``filter_documents`` returns embeddings and meta as written; filters mean what Haystack's
  matcher means (``filters``); upstream's retrievers run our searches (``upstream``).
"""

import copy
import threading
from collections.abc import Iterator
from typing import Any

from haystack import Document, default_from_dict, default_to_dict
from haystack.utils import Secret, deserialize_secrets_inplace
from milvus_haystack import MilvusDocumentStore as UpstreamMilvusDocumentStore
from pymilvus import MilvusClient

from components.stores.async_twins import DocumentStoreAsyncTwins
from components.stores.document_pages import DocumentPages
from components.stores.metadata_queries import MetadataQueries
from components.stores.milvus.collection import (
    MilvusCollectionError,
    check_collection,
    ensure_loaded,
    missing,
    where,
)
from components.stores.milvus.connection import (
    MilvusConnectionError,
    analyzer_in_use,
    close_client,
    is_lite_engine,
    open_client,
)
from components.stores.milvus.filter_operations import MilvusFilterOperations
from components.stores.milvus.searches import RANKERS
from components.stores.milvus.settings import MilvusSettings
from components.stores.milvus.upstream import UpstreamCompatibility
from components.stores.milvus.writes import MilvusWrites

__all__ = ["RANKERS", "MilvusDocumentStore"]


class MilvusDocumentStore(
    UpstreamCompatibility,  # first: its retrieval methods replace upstream's
    MilvusWrites,  # before upstream: its write_documents replaces upstream's
    UpstreamMilvusDocumentStore,  # type: ignore[misc]
    MilvusFilterOperations,
    DocumentStoreAsyncTwins,
    MetadataQueries,
    DocumentPages,
):
    """
    A Haystack DocumentStore in one Milvus collection: dense vectors, text with Milvus's BM25, and metadata.

    ``uri`` is a local path ending in ``.db`` for Milvus Lite, or ``http://host:port`` for a Milvus server or
    cluster: the same pipelines run on both. ``search`` scores are higher-is-better (IP, cosine, or the
    negated L2 distance; BM25 scores positive on Lite and server alike).
    """

    def __init__(
        self,
        uri: str = "milvus.db",
        token: Secret | None = Secret.from_env_var("MILVUS_TOKEN", strict=False),
        collection_name: str = "needle",
        id_field_name: str = "id",
        vector_field_name: str = "vector",
        text_field_name: str = "contents",
        sparse_field_name: str = "sparse",
        embedding_dim: int | None = None,
        id_max_length: int = 64,
        text_max_length: int = 60_000,
        metric_type: str = "IP",
        index_params: dict[str, Any] | None = None,
        search_params: dict[str, Any] | None = None,
        index_chunk_size: int = 1000,
        bm25: bool = True,
        bm25_analyzer: str | dict[str, Any] = "english",
        consistency_level: str = "Session",
        timeout: float = 30.0,
        partition_key_field: str | None = None,
        num_partitions: int | None = None,
        learned_sparse_field_name: str | None = None,
    ) -> None:
        """
        :param uri: Milvus Lite database path (``*.db``, relative to the working directory) or a server URL.
        :param token: ``user:password`` or an API key for a server, as a Secret (``MILVUS_TOKEN``); Lite has none.
        :param collection_name: the collection to use (created on the first write).
        :param id_field_name: primary key field (VARCHAR of up to ``id_max_length`` bytes).
        :param vector_field_name: dense vector field.
        :param text_field_name: text field (VARCHAR of up to ``text_max_length`` bytes; longer text is cut).
        :param sparse_field_name: BM25 sparse field, filled by Milvus from the text.
        :param embedding_dim: vector size of a new collection; needed only when its first write has no embedded
            document (None: the size of the first embeddings written).
        :param metric_type: IP (default, as in the seed), COSINE or L2.
        :param index_params: dense index parameters (default AUTOINDEX), e.g. ``{"index_type": "HNSW", ...}``.
        :param search_params: dense search parameters, e.g. ``{"params": {"ef": 64}}``.
        :param index_chunk_size: rows per insert call.
        :param bm25: add the BM25 function and its sparse index to a new collection.
        :param bm25_analyzer: ``english`` (lowercase, stop words, stemming on servers), ``chinese`` (jieba),
            ``standard``, or Milvus ``analyzer_params``.
        :param consistency_level: Milvus consistency level of a new collection.
        :param timeout: seconds for connecting and for each call.
        :param partition_key_field: tenants: the meta key (``"tenant"`` for ``meta.tenant``) whose string value every
            document must have, stored as the new collection's Milvus partition key; a filter on
            ``meta.<key>`` with ``==``/``in`` searches only those tenants' partitions (on a Milvus server; Milvus Lite
            keeps them apart but scans every partition). None: no tenants.
        :param num_partitions: partitions the tenants are hashed into, in [1, 1024] (None: Milvus's default).
        :param learned_sparse_field_name: a SPARSE_FLOAT_VECTOR field for each document's ``sparse_embedding``
            (required of every document written), searched by ``sparse_embedding_search`` (dot product).
        :raises ValueError: naming the setting that is out of range.
        """
        self.settings = MilvusSettings(
            uri=uri,
            collection_name=collection_name,
            id_field_name=id_field_name,
            vector_field_name=vector_field_name,
            text_field_name=text_field_name,
            sparse_field_name=sparse_field_name,
            embedding_dim=embedding_dim,
            id_max_length=id_max_length,
            text_max_length=text_max_length,
            metric_type=metric_type,
            index_params=index_params,
            search_params=search_params,
            index_chunk_size=index_chunk_size,
            bm25=bm25,
            bm25_analyzer=bm25_analyzer,
            consistency_level=consistency_level,
            timeout=timeout,
            partition_key_field=partition_key_field,
            num_partitions=num_partitions,
            learned_sparse_field_name=learned_sparse_field_name,
        )
        self.token = token
        self._lock = threading.RLock()
        self._client: MilvusClient | None = None
        self._merging_upsert = False
        self.dim: int | None = None
        self._flagged = False
        self._set_upstream_attributes()

    def to_dict(self) -> dict[str, Any]:
        """Serialise the settings; the token as its env var reference, never its value."""
        token = self.token.to_dict() if self.token is not None else None
        return default_to_dict(self, token=token, **self.settings.as_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MilvusDocumentStore":
        """Rebuild the store from ``to_dict`` output (only settings: no type named in the data is imported)."""
        data = copy.deepcopy(data)  # deserialize_secrets_inplace would turn the caller's token into a Secret
        deserialize_secrets_inplace(data.get("init_parameters", {}), keys=["token"])
        return default_from_dict(cls, data)

    @property
    def client(self) -> MilvusClient:
        """The connected client (connects on first use)."""
        self.warm_up()
        if self._client is None:  # closed by another thread meanwhile
            raise MilvusConnectionError(f"{where(self.settings)}: the store was closed")
        return self._client

    def warm_up(self) -> None:
        """Connect and check an existing collection against the settings; idempotent and thread-safe."""
        with self._lock:
            if self._client is not None:
                return
            client = open_client(self.settings, self.token)
            try:
                with self._errors("describe_collection"):
                    self._merging_upsert = is_lite_engine(client)  # see writes.clear_stale_meta
                    if client.has_collection(self.settings.collection_name):
                        self.dim, self._flagged = check_collection(client, self.settings, self.settings.embedding_dim)
                        ensure_loaded(client, self.settings)  # a reopened database starts released: load it
            except BaseException:
                close_client(client, self.settings)  # else a Lite database would stay locked by this process
                raise
            self._client = client
            self._sync_upstream_state()

    @property
    def bm25_analyzer_in_use(self) -> str:
        """Which BM25 analyzer runs (Milvus Lite ignores the stemmer filter; a Milvus server applies it)."""
        with self._errors("get_server_version"):
            return analyzer_in_use(self.client, self.settings)

    def close(self) -> None:
        """Close the connection; a Milvus Lite database is unlocked once no other store of this process has it open."""
        with self._lock:
            if self._client is not None:
                client, self._client = self._client, None
                self._milvus_client = None
                close_client(client, self.settings)

    def count_documents(self) -> int:
        """How many documents the collection holds (0 before the first write)."""
        with self._lock:
            if not self._exists():
                return 0
            result = self._call("query", self.settings.collection_name, filter="", output_fields=["count(*)"])
            return int(result[0]["count(*)"])

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """
        All documents matching Haystack ``filters``, with their embeddings (not capped at Milvus's query limit).

        :raises FilterError: naming the field and operator of a malformed filter or an uncomparable value.
        """
        with self._lock:
            where, exists = self._selected(filters)
            return self._matching(where, vectors=True) if exists else []

    def _document_pages(self, filters: dict[str, Any] | None, page_size: int) -> Iterator[list[Document]]:
        """Pages of the documents matching ``filters``, with their embeddings (``DocumentPages``), through Milvus's
        query iterator: the lock is held to translate the filter, not while pages are read."""
        with self._lock:
            where, exists = self._selected(filters)
        if exists:
            yield from self._matching_pages(where, vectors=True, page_size=page_size)

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the documents with these ids (unknown ids are ignored)."""
        with self._lock:
            if document_ids and self._exists():
                self._call(
                    "delete", self.settings.collection_name, ids=list(document_ids), timeout=self.settings.timeout
                )

    def _exists(self) -> bool:
        self.warm_up()
        return self.dim is not None

    def _searchable(self, sparse: bool = False) -> None:
        """Refuse a search on a missing collection, or a BM25 search on one built without BM25."""
        if not self._exists():
            raise missing(self.settings)
        if sparse and not self.settings.bm25:
            raise MilvusCollectionError(
                f"{where(self.settings)}: BM25 search needs bm25=True (a collection created with bm25=False has no "
                f"BM25 field: write the documents into a new collection)"
            )
