"""The Milvus store's searches: dense, BM25, learned sparse and Milvus hybrid (RRF or weighted), whole batches in
one call.

Each takes every query of a batch (nq > 1) in one Milvus request and returns one best-first Document list per
query, scores higher-is-better and ``meta["retrieval_type"]`` set (dense, sparse, hybrid); ``*_async`` twins run
them in a worker thread. Inputs are checked before Milvus is called: ``top_k`` and filters by the shared rules
(``components.checks``), query embeddings against the collection's dimension.

Dense search only returns documents that have an embedding (``filters.dense_expression``); BM25 search returns
any document with matching text; learned sparse search (``learned_sparse_field_name``) returns the documents
sharing a term with the query, scored by the dot product of their weights. A filter Milvus cannot express exactly
is applied as the exact ids of the documents it selects (``filters`` module), so a search's ``top_k`` is always
filled from the matching documents.
"""

from typing import Any

from haystack import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker
from pymilvus.client.abstract import BaseRanker

from components.checks import check_top_k
from components.stores.async_twins import twin
from components.stores.milvus.calls import MilvusCalls
from components.stores.milvus.collection import MilvusCollectionError, where
from components.stores.milvus.filters import dense_expression, ids_expression
from components.stores.milvus.records import hits_to_documents, output_fields
from components.stores.milvus.sparse_vectors import sparse_value

RANKERS = ("rrf", "weighted")


class MilvusSearches(MilvusCalls):
    """Mixin of ``MilvusDocumentStore``: the searches, over its ``settings``, ``dim`` and ``_call``."""

    def warm_up(self) -> None:
        raise NotImplementedError

    def _searchable(self, sparse: bool = False) -> None:
        raise NotImplementedError

    def _expression(self, filters: dict[str, Any] | None, sparse: bool = False) -> str | None:
        """
        The collection checked for this search, and the Milvus expression of ``filters`` for it (None: no match).

        An inexact filter becomes the ids of the documents it selects, found with Haystack's matcher (within its
        exact tenant conditions, so that a server still searches only those tenants' partitions).
        """
        self.warm_up()  # the translation reads the collection's schema
        where = self._filter(filters)
        self._searchable(sparse)
        if where.exact:
            return where.expression
        ids = [document.id for document in self._matching(where, vectors=False)]
        return ids_expression(self.settings.id_field_name, ids, where.tenant_expression)

    def _check_dim(self, query_embeddings: list[list[float]]) -> None:
        """Refuse query embeddings of another length than the collection's vectors (Milvus's error is a numpy one)."""
        for position, embedding in enumerate(query_embeddings):
            if len(embedding) != self.dim:
                raise ValueError(
                    f"query_embeddings[{position}] has {len(embedding)} values; the vectors of "
                    f"Milvus collection {self.settings.collection_name!r} have {self.dim}: embed the queries "
                    f"with the collection's model"
                )

    def _search(
        self, data: list[Any], field: str, params: dict[str, Any], top_k: int, expression: str, kind: str
    ) -> list[list[Document]]:
        """One Milvus search of every query in DATA on FIELD; the hits as Documents of ``retrieval_type`` KIND."""
        hits = self._call(
            "search",
            self.settings.collection_name,
            data=data,
            anns_field=field,
            search_params=params,
            limit=top_k,
            filter=expression,
            output_fields=output_fields(self.settings),
            timeout=self.settings.timeout,
        )
        return hits_to_documents(hits, self.settings, kind)

    def embedding_search(
        self, query_embeddings: list[list[float]], top_k: int, filters: dict[str, Any] | None = None
    ) -> list[list[Document]]:
        """Dense search: one best-first list per query embedding, all in one Milvus call (nq > 1)."""
        check_top_k(top_k)
        expression = dense_expression(self._expression(filters), self._flagged)
        self._check_dim(query_embeddings)
        if expression is None or not query_embeddings:  # None: the filters match nothing
            return [[] for _ in query_embeddings]
        settings = self.settings
        return self._search(
            query_embeddings, settings.vector_field_name, settings.dense_search(), top_k, expression, "dense"
        )

    def bm25_search(
        self, queries: list[str], top_k: int, filters: dict[str, Any] | None = None
    ) -> list[list[Document]]:
        """BM25 search inside Milvus: one best-first list per query text, all in one call."""
        check_top_k(top_k)
        expression = self._expression(filters, sparse=True)
        if expression is None or not queries:  # None: the filters match nothing
            return [[] for _ in queries]
        bm25 = {"metric_type": "BM25", "params": {}}
        return self._search(queries, self.settings.sparse_field_name, bm25, top_k, expression, "sparse")

    def sparse_embedding_search(
        self, query_sparse_embeddings: list[SparseEmbedding], top_k: int, filters: dict[str, Any] | None = None
    ) -> list[list[Document]]:
        """
        Learned sparse search: one best-first list per query ``SparseEmbedding``, all in one Milvus call.

        Scores are dot products of the query's and each document's weights (Milvus's IP on the sparse inverted
        index); a document sharing no term with the query is not returned, and a query without a non-zero
        weight matches nothing.

        :raises MilvusCollectionError: the store has no ``learned_sparse_field_name``.
        :raises ValueError: naming the query whose term ids or weights Milvus cannot take.
        """
        check_top_k(top_k)
        field = self.settings.learned_sparse_field_name
        if field is None:
            raise MilvusCollectionError(
                f"{where(self.settings)}: sparse embedding search needs learned_sparse_field_name (the field of the "
                f"documents' sparse_embedding); write the documents into a collection created with it"
            )
        vectors = [
            sparse_value(query, f"query_sparse_embeddings[{position}]", field, query=True)
            for position, query in enumerate(query_sparse_embeddings)
        ]
        expression = self._expression(filters)
        if expression is None or not vectors:  # None: the filters match nothing
            return [[] for _ in vectors]
        return self._search(vectors, field, {"metric_type": "IP", "params": {}}, top_k, expression, "sparse")

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
        if ranker not in RANKERS:
            raise ValueError(f"ranker must be one of {', '.join(RANKERS)}, got {ranker!r}")
        fusion = RRFRanker(rrf_k) if ranker == "rrf" else WeightedRanker(*weights)
        return self._fused_search(queries, query_embeddings, top_k, filters, fusion)

    def _fused_search(
        self,
        queries: list[str],
        query_embeddings: list[list[float]],
        top_k: int,
        filters: dict[str, Any] | None,
        fusion: BaseRanker,
    ) -> list[list[Document]]:
        """One Milvus hybrid_search: dense (embedded documents only) and BM25 per query, fused by ``fusion``."""
        check_top_k(top_k)
        if len(queries) != len(query_embeddings):
            raise ValueError(f"got {len(queries)} queries but {len(query_embeddings)} query embeddings")
        expression = self._expression(filters, sparse=True)
        self._check_dim(query_embeddings)
        dense = dense_expression(expression, self._flagged)
        if expression is None or dense is None or not queries:  # None: the filters match nothing
            return [[] for _ in queries]
        settings = self.settings
        requests = [
            AnnSearchRequest(query_embeddings, settings.vector_field_name, settings.dense_search(), top_k, dense),
            AnnSearchRequest(queries, settings.sparse_field_name, {"metric_type": "BM25"}, top_k, expression),
        ]
        hits = self._call(
            "hybrid_search",
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
    sparse_embedding_search_async = twin(sparse_embedding_search)
    hybrid_search_async = twin(hybrid_search)
