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
  unreachable URI, a locked Milvus Lite database, a missing or mismatched collection.
"""

import threading
from typing import Any

from haystack import Document, default_from_dict, default_to_dict, logging
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret, deserialize_secrets_inplace
from milvus_haystack import MilvusDocumentStore as UpstreamMilvusDocumentStore
from pymilvus import AnnSearchRequest, MilvusClient, RRFRanker, WeightedRanker

from components.checks import check_top_k
from components.stores.async_twins import DocumentStoreAsyncTwins, twin
from components.stores.document_checks import check_document_list
from components.stores.milvus.collection import (
    MilvusCollectionError,
    check_collection,
    create_collection,
    ensure_loaded,
    where,
)
from components.stores.milvus.connection import MilvusConnectionError, analyzer_in_use, open_client
from components.stores.milvus.records import hits_to_documents, milvus_filter, output_fields, to_document, to_rows
from components.stores.milvus.settings import MilvusSettings

logger = logging.getLogger(__name__)
RANKERS = ("rrf", "weighted")


class MilvusDocumentStore(UpstreamMilvusDocumentStore, DocumentStoreAsyncTwins):  # type: ignore[misc]
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
    ) -> None:
        """
        :param uri: Milvus Lite database path (``*.db``, relative to the working directory) or a server URL.
        :param token: ``user:password`` or an API key for a server, as a Secret (``MILVUS_TOKEN``); Lite has none.
        :param collection_name: the collection to use (created on the first write).
        :param id_field_name: primary key field (VARCHAR of up to ``id_max_length`` bytes).
        :param vector_field_name: dense vector field.
        :param text_field_name: text field (VARCHAR of up to ``text_max_length`` bytes; longer text is cut).
        :param sparse_field_name: BM25 sparse field, filled by Milvus from the text.
        :param metric_type: IP (default, as in the seed), COSINE or L2.
        :param index_params: dense index parameters (default AUTOINDEX), e.g. ``{"index_type": "HNSW", ...}``.
        :param search_params: dense search parameters, e.g. ``{"params": {"ef": 64}}``.
        :param index_chunk_size: rows per insert call.
        :param bm25: add the BM25 function and its sparse index to a new collection.
        :param bm25_analyzer: ``english`` (lowercase, stop words, stemming on servers), ``chinese`` (jieba),
            ``standard``, or Milvus ``analyzer_params``.
        :param consistency_level: Milvus consistency level of a new collection.
        :param timeout: seconds for connecting and for each call.
        :raises ValueError: naming the setting that is out of range.
        """
        self.settings = MilvusSettings(
            uri=uri,
            collection_name=collection_name,
            id_field_name=id_field_name,
            vector_field_name=vector_field_name,
            text_field_name=text_field_name,
            sparse_field_name=sparse_field_name,
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
        )
        self.token = token
        self._lock = threading.RLock()
        self._client: MilvusClient | None = None
        self.dim: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the settings; the token as its env var reference, never its value."""
        token = self.token.to_dict() if self.token is not None else None
        return default_to_dict(self, token=token, **self.settings.as_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MilvusDocumentStore":
        """Rebuild the store from ``to_dict`` output (only settings: no type named in the data is imported)."""
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
            if client.has_collection(self.settings.collection_name):
                self.dim = check_collection(client, self.settings, None)
                ensure_loaded(client, self.settings)  # a reopened database starts unloaded: load it for the user
            self._client = client
            self._sync_upstream_state()

    def _sync_upstream_state(self) -> None:
        """Set the attributes milvus-haystack's inherited methods read (upstream sets them while connecting)."""
        settings = self.settings
        self._milvus_client = self._client
        self.collection_name = settings.collection_name
        self.partition_names = None
        self._primary_field, self._text_field = settings.id_field_name, settings.text_field_name
        self._vector_field, self._sparse_vector_field = settings.vector_field_name, settings.sparse_field_name
        self.enable_dynamic_field, self._dummy_value = True, 999.0
        self._collection_exists = self.dim is not None

    @property
    def bm25_analyzer_in_use(self) -> str:
        """Which BM25 analyzer runs (Milvus Lite ignores the stemmer filter; a Milvus server applies it)."""
        return analyzer_in_use(self.client, self.settings)

    def close(self) -> None:
        """Close the connection (a Milvus Lite database stays locked by this process until then)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def count_documents(self) -> int:
        """How many documents the collection holds (0 before the first write)."""
        with self._lock:
            if not self._exists():
                return 0
            result = self.client.query(self.settings.collection_name, filter="", output_fields=["count(*)"])
            return int(result[0]["count(*)"])

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """All documents matching Haystack ``filters`` (all of them, not capped at Milvus's 16,384 query limit)."""
        expression = milvus_filter(filters, self.settings)
        with self._lock:
            if not self._exists():
                return []
            iterator = self.client.query_iterator(
                self.settings.collection_name,
                batch_size=1000,
                filter=expression,
                output_fields=output_fields(self.settings),
            )
            documents: list[Document] = []
            try:
                while batch := iterator.next():
                    documents.extend(to_document(entity, self.settings) for entity in batch)
            finally:
                iterator.close()
            return documents

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        Write embedded documents; the collection is created on the first write with their dimension.

        :param policy: OVERWRITE (upsert), SKIP (keep what is stored), NONE or FAIL (error on an existing id).
        :returns: the number of documents written.
        :raises ValueError: naming the document with no embedding, an id too long or a reserved meta key.
        :raises DuplicateDocumentError: an id already stored (or twice in ``documents``) under NONE/FAIL.
        :raises MilvusCollectionError: the collection exists with another dimension, metric or fields.
        """
        check_document_list(documents)
        if not documents:
            return 0
        rows = to_rows(documents, self.settings)
        with self._lock:
            self._prepare_collection(len(rows[0][self.settings.vector_field_name]))
            rows = self._apply_policy(rows, policy)
            write = self.client.upsert if policy == DuplicatePolicy.OVERWRITE else self.client.insert
            size = self.settings.index_chunk_size
            for start in range(0, len(rows), size):
                write(self.settings.collection_name, rows[start : start + size], timeout=self.settings.timeout)
            if len(rows) >= size:
                self.flush()
            return len(rows)

    def _prepare_collection(self, dim: int) -> None:
        """Create the collection for ``dim``-dimensional vectors, or check that the existing one has them."""
        if self._exists():
            check_collection(self.client, self.settings, dim)
            return
        create_collection(self.client, self.settings, dim)
        self.dim = dim
        self._collection_exists = True
        logger.info(
            "created {where} (BM25 analyzer: {analyzer})", where=where(self.settings), analyzer=self._analyzer()
        )

    def _analyzer(self) -> str:
        return self.bm25_analyzer_in_use if self.settings.bm25 else "none"

    def _apply_policy(self, rows: list[dict[str, Any]], policy: DuplicatePolicy) -> list[dict[str, Any]]:
        """The rows to write under ``policy`` (upstream ignores SKIP/FAIL and inserts duplicate ids)."""
        key = self.settings.id_field_name
        if policy == DuplicatePolicy.OVERWRITE:
            return list({row[key]: row for row in rows}.values())  # the last of repeated ids wins
        stored = self._stored_ids([row[key] for row in rows])
        if policy == DuplicatePolicy.SKIP:
            kept: dict[str, dict[str, Any]] = {}
            for row in rows:
                if row[key] not in stored:
                    kept.setdefault(row[key], row)
            return list(kept.values())
        seen: set[str] = set()
        for row in rows:
            if row[key] in stored or row[key] in seen:
                raise DuplicateDocumentError(f"ID {row[key]!r} already exists in {where(self.settings)}")
            seen.add(row[key])
        return rows

    def _stored_ids(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` the collection already holds."""
        found: set[str] = set()
        size = self.settings.index_chunk_size
        for start in range(0, len(ids), size):
            rows = self.client.query(
                self.settings.collection_name,
                ids=ids[start : start + size],
                output_fields=[self.settings.id_field_name],
            )
            found.update(row[self.settings.id_field_name] for row in rows)
        return found

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the documents with these ids (unknown ids are ignored)."""
        with self._lock:
            if document_ids and self._exists():
                self.client.delete(self.settings.collection_name, ids=list(document_ids), timeout=self.settings.timeout)

    def flush(self) -> None:
        """Seal what was inserted so that searches run on indexed segments (call after bulk loads)."""
        with self._lock:
            if self._exists():
                self.client.flush(self.settings.collection_name, timeout=self.settings.timeout)

    def _exists(self) -> bool:
        self.warm_up()
        return self.dim is not None

    def _searchable(self, sparse: bool = False) -> None:
        """Refuse a search on a missing collection, or a BM25 search on one built without BM25."""
        if not self._exists():
            raise MilvusCollectionError(
                f"{where(self.settings)} does not exist: write documents into it first "
                f"(needle index --store milvus), or set collection_name/uri"
            )
        if sparse and not self.settings.bm25:
            raise MilvusCollectionError(f"{where(self.settings)}: BM25 needs bm25=True when the collection is created")

    def embedding_search(
        self, query_embeddings: list[list[float]], top_k: int, filters: dict[str, Any] | None = None
    ) -> list[list[Document]]:
        """Dense search: one best-first list per query embedding, all in one Milvus call (nq > 1)."""
        check_top_k(top_k)
        expression = milvus_filter(filters, self.settings)
        self._searchable()
        if not query_embeddings:
            return []
        hits = self.client.search(
            self.settings.collection_name,
            data=query_embeddings,
            anns_field=self.settings.vector_field_name,
            search_params=self.settings.dense_search(),
            limit=top_k,
            filter=expression,
            output_fields=output_fields(self.settings),
            timeout=self.settings.timeout,
        )
        return hits_to_documents(hits, self.settings, "dense")

    def bm25_search(
        self, queries: list[str], top_k: int, filters: dict[str, Any] | None = None
    ) -> list[list[Document]]:
        """BM25 search inside Milvus: one best-first list per query text, all in one call."""
        check_top_k(top_k)
        expression = milvus_filter(filters, self.settings)
        self._searchable(sparse=True)
        if not queries:
            return []
        hits = self.client.search(
            self.settings.collection_name,
            data=queries,
            anns_field=self.settings.sparse_field_name,
            search_params={"metric_type": "BM25", "params": {}},
            limit=top_k,
            filter=expression,
            output_fields=output_fields(self.settings),
            timeout=self.settings.timeout,
        )
        return hits_to_documents(hits, self.settings, "sparse")

    def hybrid_search(
        self,
        queries: list[str],
        query_embeddings: list[list[float]],
        top_k: int,
        filters: dict[str, Any] | None = None,
        ranker: str = "rrf",
        rrf_k: int = 60,
        weights: tuple[float, float] = (0.5, 0.5),
    ) -> list[list[Document]]:
        """Milvus's own hybrid search: dense and BM25 per query, fused by RRF or by weights, in one call."""
        check_top_k(top_k)
        if ranker not in RANKERS:
            raise ValueError(f"ranker must be one of {', '.join(RANKERS)}, got {ranker!r}")
        if len(queries) != len(query_embeddings):
            raise ValueError(f"got {len(queries)} queries but {len(query_embeddings)} query embeddings")
        expression = milvus_filter(filters, self.settings)
        self._searchable(sparse=True)
        if not queries:
            return []
        settings = self.settings
        requests = [
            AnnSearchRequest(query_embeddings, settings.vector_field_name, settings.dense_search(), top_k, expression),
            AnnSearchRequest(queries, settings.sparse_field_name, {"metric_type": "BM25"}, top_k, expression),
        ]
        fusion = RRFRanker(rrf_k) if ranker == "rrf" else WeightedRanker(*weights)
        hits = self.client.hybrid_search(
            settings.collection_name,
            requests,
            ranker=fusion,
            limit=top_k,
            output_fields=output_fields(settings),
            timeout=settings.timeout,
        )
        return hits_to_documents(hits, settings, "hybrid")

    embedding_search_async = twin(embedding_search)
    bm25_search_async = twin(bm25_search)
    hybrid_search_async = twin(hybrid_search)
