"""Batch twin of :class:`MixRetrieveRanker`: fuse dense and sparse results for many queries in one run.

Batch retrievers (``FAISSBatchEmbeddingRetriever``, ``BM25BatchRetriever``) answer every query in one
vectorised call and emit one list of documents per query; this ranker takes those nested lists and fuses
them query by query with exactly the weights, normalisation and merge rules of ``MixRetrieveRanker``, so a
hybrid pipeline can encode all queries in one batch instead of one forward pass per query.
"""

from haystack import Document, component

from components.checks import check_queries
from components.rankers.mix_retrieve_ranker import MixRetrieveRankerBase


@component
class MixRetrieveBatchRanker(MixRetrieveRankerBase):
    """
    Query-length-adaptive fusion of dense and BM25 results, one fused list per query.

    Same parameters as :class:`MixRetrieveRanker` (``top_k``, ``baseline``, ``amplitude``, ``slope``,
    ``midpoint``, ``score_threshold``); ``queries[i]`` is fused from ``dense_documents[i]`` and
    ``sparse_documents[i]``. Both share :class:`MixRetrieveRankerBase`; this one takes a list of queries, so it is
    not a single-query ranker.
    """

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        queries: list[str],
        dense_documents: list[list[Document]] | None = None,
        sparse_documents: list[list[Document]] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Fuse each query's dense and sparse results and keep its best ``top_k``.

        :param queries: the queries; each one's length in characters sets its dense weight.
        :param dense_documents: per query, the results of a dense retriever.
        :param sparse_documents: per query, the results of a sparse (BM25) retriever.
        :param top_k: how many to return per query (1..10000); defaults to the init value.
        :param score_threshold: minimum fused score for this run; defaults to the init value.
        :returns: ``{"documents": [[...], ...]}``, one list per query, best first.
        :raises ValueError: if a query is blank, oversized or not valid Unicode (named ``queries[i]``), or a side's
            number of result lists differs from the number of queries.
        """
        check_queries(queries)
        threshold = self._resolve_threshold(score_threshold)
        dense = self._per_query(dense_documents, len(queries), "dense_documents")
        sparse = self._per_query(sparse_documents, len(queries), "sparse_documents")
        fused = [
            self._fused_top_k(q, None, d, s, top_k, threshold)
            for q, d, s in zip(queries, dense, sparse, strict=True)  # _per_query made all three len(queries) long
        ]
        return {"documents": fused}

    @staticmethod
    def _per_query(lists: list[list[Document]] | None, n: int, socket: str) -> list[list[Document]]:
        """One list per query (empty lists when the side is not connected); a count mismatch is an error."""
        if lists is None:
            return [[] for _ in range(n)]
        if len(lists) != n:
            raise ValueError(f"{socket} holds {len(lists)} result lists for {n} queries; they must match one to one")
        return lists
