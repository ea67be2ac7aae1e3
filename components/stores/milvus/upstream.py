"""What milvus-haystack's own methods and retrievers read from a store, provided by ours with the same meaning.

Our ``MilvusDocumentStore`` subclasses milvus-haystack 0.1.0's but never runs its ``__init__`` (which connects),
so the attributes upstream sets there are set here: ``search_params`` (the attribute whose absence crashed
upstream's ``MilvusEmbeddingRetriever``), ``index_params``, ``sparse_search_params``, the field names,
``builtin_function`` (the store's BM25 function) and the rest; the client and collection state follow the
connection (``_sync_upstream_state``).

Upstream's ``MilvusEmbeddingRetriever``, ``MilvusSparseEmbeddingRetriever`` (with ``query_text``) and
``MilvusHybridRetriever`` (with ``query_text``, any pymilvus ranker) call ``_embedding_retrieval``,
``_sparse_embedding_retrieval`` and ``_hybrid_retrieval``; here those run the store's own searches, so upstream's
retrievers return exactly what ours return: Haystack filter semantics, no document without an embedding from
dense search, higher-is-better scores and ``meta["retrieval_type"]``. Upstream's sparse retriever searches BM25
with ``query_text``; without it, a ``SparseEmbedding`` query is searched in the learned sparse field
(``learned_sparse_field_name``), and refused by a store without one (its sparse field is Milvus's BM25 function
output, which only text queries). Upstream's hybrid retriever always fuses dense with BM25.
"""

from typing import Any

from haystack import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.utils import Secret
from milvus_haystack import MilvusDocumentStore as UpstreamMilvusDocumentStore
from milvus_haystack.function import BM25BuiltInFunction
from pymilvus import MilvusClient, RRFRanker
from pymilvus.client.abstract import BaseRanker

from components.stores.milvus.collection import MilvusCollectionError, bm25_function_name, where
from components.stores.milvus.records import to_document
from components.stores.milvus.searches import MilvusSearches
from components.stores.milvus.settings import MilvusSettings


class UpstreamCompatibility(MilvusSearches):
    """
    Mixin of ``MilvusDocumentStore``, first in its bases: milvus-haystack's attributes and retrieval entry points.

    It declares no stubs: as the first base, a stub here would hide the store's real method.
    """

    token: Secret | None
    _client: MilvusClient | None

    def _set_upstream_attributes(self) -> None:
        """The attributes upstream's ``__init__`` sets, from our settings (no connection)."""
        settings = self.settings
        self.collection_name = settings.collection_name
        self.collection_description, self.collection_properties = "", None
        self.connection_args: dict[str, Any] = {"uri": settings.uri, **({"token": self.token} if self.token else {})}
        self.consistency_level, self.timeout = settings.consistency_level, settings.timeout
        self.index_params, self.search_params = settings.dense_index(), settings.dense_search()
        self.drop_old, self.enable_dynamic_field = False, True
        self._primary_field, self._text_field = settings.id_field_name, settings.text_field_name
        self._vector_field = settings.vector_field_name
        self._sparse_vector_field = settings.sparse_field_name if settings.bm25 else None
        self.sparse_index_params = _bm25_index() if settings.bm25 else None
        self.sparse_search_params = {"metric_type": "BM25"} if settings.bm25 else None
        self._partition_key_field, self.partition_names, self.replica_number = settings.partition_key_field, None, 1
        self.builtin_function = [_bm25_function(settings)] if settings.bm25 else []
        UpstreamMilvusDocumentStore._check_function(self)  # sets _sparse_mode and the text field's analyzer options
        self._dummy_value = 999.0
        self._sync_upstream_state()

    def _sync_upstream_state(self) -> None:
        """The client, whether the collection exists, and its schema's field names, as upstream's methods read them."""
        self._milvus_client = self._client
        self._collection_exists = self.dim is not None
        self.fields: list[str] = []
        if self._collection_exists and self._client is not None:
            described = self._call("describe_collection", self.settings.collection_name, timeout=self.settings.timeout)
            self.fields = [field["name"] for field in described["fields"]]

    def _embedding_retrieval(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        query_text: str | None = None,
    ) -> list[Document]:
        """Upstream's dense retrieval of one query: the store's ``embedding_search``."""
        return self.embedding_search([list(query_embedding)], top_k, filters)[0]

    def _sparse_embedding_retrieval(
        self,
        query_sparse_embedding: SparseEmbedding | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        query_text: str | None = None,
    ) -> list[Document]:
        """Upstream's sparse retrieval of one query: the store's BM25 search of ``query_text``, else its learned
        sparse search of ``query_sparse_embedding``."""
        if query_text is None and query_sparse_embedding is not None and self.settings.learned_sparse_field_name:
            return self.sparse_embedding_search([query_sparse_embedding], top_k, filters)[0]
        return self.bm25_search([self._query_text(query_text)], top_k, filters)[0]

    def _hybrid_retrieval(
        self,
        query_embedding: list[float],
        query_sparse_embedding: SparseEmbedding | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        reranker: BaseRanker | None = None,
        query_text: str | None = None,
    ) -> list[Document]:
        """Upstream's hybrid retrieval: dense and BM25 of ``query_text``, fused by ``reranker`` (RRF by default)."""
        text = self._query_text(query_text)
        return self._fused_search([text], [list(query_embedding)], top_k, filters, reranker or RRFRanker())[0]

    def _parse_document(self, data: dict[str, Any]) -> Document:
        """Upstream's row-to-Document (its ``_parse_search_result`` calls it): ours, never a placeholder vector."""
        return to_document(data, self.settings)

    def _query_text(self, query_text: str | None) -> str:
        if query_text is None:
            raise MilvusCollectionError(
                f"{where(self.settings)}: its sparse field is Milvus's BM25 function over the text, so sparse and "
                f"hybrid retrieval need query_text (a query_sparse_embedding cannot be searched against it)"
            )
        return query_text


def _bm25_index() -> dict[str, Any]:
    return {"index_type": "SPARSE_INVERTED_INDEX", "metric_type": "BM25", "params": {}}


def _bm25_function(settings: MilvusSettings) -> BM25BuiltInFunction:
    """The collection's BM25 function as upstream describes it (same name, fields and analyzer)."""
    return BM25BuiltInFunction(
        input_field_names=settings.text_field_name,
        output_field_names=settings.sparse_field_name,
        analyzer_params=settings.analyzer_params(),
        function_name=bm25_function_name(settings),
    )
