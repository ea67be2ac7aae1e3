"""Learned sparse retrieval (SPLADE-style) from a SparseDocumentStore, one query vector at a time."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import FilterPolicy

from components.retrievers.retriever_common import StoreRetrieverBase
from components.score_threshold import above_threshold
from components.stores.sparse.document_store import SparseDocumentStore


@component
class SparseEmbeddingRetriever(StoreRetrieverBase[SparseDocumentStore]):
    """
    Retrieves the documents whose sparse vectors best match a query's (dot product), as Haystack's
    ``InMemorySparseEmbeddingRetriever`` does, over an impact-scored inverted index.

    Hits are new Documents with their ``score`` and ``meta["retrieval_type"] = "sparse"``, best first; only
    documents sharing a term with the query come back. Filters are exact: with enough matching documents, exactly
    ``top_k`` come back, unless ``score_threshold`` drops weaker ones (SPLADE scores are unbounded dot products,
    larger for longer queries: compare a threshold with scores of your own queries).

    ```python
    retriever = SparseEmbeddingRetriever(SparseDocumentStore(path="index/sparse"), top_k=5)
    hits = retriever.run(query_sparse_embedding=text_embedder.run(text="what causes scurvy?")["sparse_embedding"])
    ```
    """

    _store_type = SparseDocumentStore
    _store_error = TypeError
    _extra_init_parameters = ("return_embedding",)

    def __init__(
        self,
        document_store: SparseDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: FilterPolicy = FilterPolicy.REPLACE,
        score_threshold: float | None = None,
        return_embedding: bool = False,
    ) -> None:
        """
        :param document_store: The SparseDocumentStore to search.
        :param filters: Haystack metadata filters applied to every query (see ``filter_policy``).
        :param top_k: Maximum number of documents per query, in [1, 10000].
        :param filter_policy: ``REPLACE`` (run-time filters, when given, replace ``filters``) or ``MERGE`` (Haystack's
            merge: both apply, except that a run-time condition on a field ``filters`` names replaces that condition,
            and ``filters`` are dropped when the top-level operators differ).
        :param score_threshold: Drop hits whose score is below it; None keeps every hit.
        :param return_embedding: Give each hit its stored ``sparse_embedding`` too (off: hundreds of terms a hit).
        :raises TypeError: If ``document_store`` is not a SparseDocumentStore.
        :raises ValueError: If ``top_k`` is not an integer in [1, 10000], ``score_threshold`` is not None or a
            finite number, or ``return_embedding`` is not a bool.
        :raises FilterError: If ``filters`` are not in Haystack's filter syntax.
        """
        if not isinstance(return_embedding, bool):
            raise ValueError(f"return_embedding must be true or false, got {return_embedding!r}")
        self._set_common(document_store, filters, top_k, filter_policy, score_threshold)
        self.return_embedding = return_embedding

    def warm_up(self) -> None:
        """Load the store's index now rather than on the first query; idempotent."""
        self.document_store.warm_up()

    @component.output_types(documents=list[Document])
    def run(
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve the best documents for one query vector.

        :param query_sparse_embedding: The query's sparse vector (a sparse text embedder's ``sparse_embedding``).
        :param filters: Metadata filters for this query, combined with the init filters per ``filter_policy``.
        :param top_k: Maximum number of documents (default: the init ``top_k``), in [1, 10000].
        :param score_threshold: Minimum score for this query (default: the init ``score_threshold``).
        :returns: ``{"documents": [...]}``, best first.
        :raises ValueError: An invalid vector, ``top_k`` or ``score_threshold`` (the message names it).
        """
        filters, top_k = self._run_settings(filters, top_k)
        threshold = self._run_threshold(score_threshold)
        hits = self.document_store.sparse_embedding_retrieval(
            query_sparse_embedding, filters=filters, top_k=top_k, return_embedding=self.return_embedding
        )
        return {"documents": above_threshold(hits, threshold)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so the event loop stays free while it scores."""
        return await asyncio.to_thread(self.run, query_sparse_embedding, filters, top_k, score_threshold)
