"""The Milvus store's searches: dense, BM25 and Milvus hybrid (RRF or weighted), whole batches in one call.

Each takes every query of a batch (nq > 1) in one Milvus request and returns one best-first Document list per
query, scores higher-is-better and ``meta["retrieval_type"]`` set (dense, sparse, hybrid); ``*_async`` twins run
them in a worker thread. Inputs are checked before Milvus is called: ``top_k`` and filters by the shared rules
(``components.checks``), query embeddings against the collection's dimension.
"""

from typing import Any

from haystack import Document
from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

from components.checks import check_top_k
from components.stores.async_twins import twin
from components.stores.milvus.calls import MilvusCalls
from components.stores.milvus.records import hits_to_documents, milvus_filter, output_fields

RANKERS = ("rrf", "weighted")


class MilvusSearches(MilvusCalls):
    """Mixin of ``MilvusDocumentStore``: the searches, over its ``settings``, ``dim`` and ``_call``."""

    def _searchable(self, sparse: bool = False) -> None:
        raise NotImplementedError

    def _check_dim(self, query_embeddings: list[list[float]]) -> None:
        """Refuse query embeddings of another length than the collection's vectors (Milvus's error is a numpy one)."""
        for position, embedding in enumerate(query_embeddings):
            if len(embedding) != self.dim:
                raise ValueError(
                    f"query_embeddings[{position}] has {len(embedding)} values; the vectors of "
                    f"Milvus collection {self.settings.collection_name!r} have {self.dim}: embed the queries "
                    f"with the collection's model"
                )

    def embedding_search(
        self, query_embeddings: list[list[float]], top_k: int, filters: dict[str, Any] | None = None
    ) -> list[list[Document]]:
        """Dense search: one best-first list per query embedding, all in one Milvus call (nq > 1)."""
        check_top_k(top_k)
        expression = milvus_filter(filters, self.settings)
        self._searchable()
        self._check_dim(query_embeddings)
        if expression is None or not query_embeddings:  # None: the filters match nothing
            return [[] for _ in query_embeddings]
        hits = self._call(
            "search",
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
        if expression is None or not queries:  # None: the filters match nothing
            return [[] for _ in queries]
        hits = self._call(
            "search",
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
        self._check_dim(query_embeddings)
        if expression is None or not queries:  # None: the filters match nothing
            return [[] for _ in queries]
        settings = self.settings
        requests = [
            AnnSearchRequest(query_embeddings, settings.vector_field_name, settings.dense_search(), top_k, expression),
            AnnSearchRequest(queries, settings.sparse_field_name, {"metric_type": "BM25"}, top_k, expression),
        ]
        fusion = RRFRanker(rrf_k) if ranker == "rrf" else WeightedRanker(*weights)
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
    hybrid_search_async = twin(hybrid_search)
