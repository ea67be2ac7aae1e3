"""Learned sparse retrieval for many query vectors at once (the batch twin of ``SparseEmbeddingRetriever``)."""

import asyncio
from typing import Any

from haystack import Document, component
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import FilterPolicy

from components.retrievers.retriever_common import StoreRetrieverBase
from components.score_threshold import above_threshold_lists
from components.stores.sparse.document_store import SparseDocumentStore


@component
class SparseEmbeddingBatchRetriever(StoreRetrieverBase[SparseDocumentStore]):
    """
    Retrieves the best documents for each of many query vectors; one list per query, in query order, each as
    ``SparseEmbeddingRetriever`` would return it. A filter is matched once for the whole batch.

    ```python
    vectors = batch_embedder.run(texts=["first question", "second question"])["sparse_embeddings"]
    first_hits, second_hits = SparseEmbeddingBatchRetriever(store).run(query_sparse_embeddings=vectors)["documents"]
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
        """Parameters as ``SparseEmbeddingRetriever``'s.

        :raises TypeError: If ``document_store`` is not a SparseDocumentStore.
        :raises ValueError: If ``top_k`` or ``score_threshold`` is out of range, or ``return_embedding`` not a bool.
        """
        if not isinstance(return_embedding, bool):
            raise ValueError(f"return_embedding must be true or false, got {return_embedding!r}")
        self._set_common(document_store, filters, top_k, filter_policy, score_threshold)
        self.return_embedding = return_embedding

    def warm_up(self) -> None:
        """Load the store's index now rather than on the first batch; idempotent."""
        self.document_store.warm_up()

    @component.output_types(documents=list[list[Document]])
    def run(
        self,
        query_sparse_embeddings: list[SparseEmbedding],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """
        Retrieve the best documents for every query vector.

        :param query_sparse_embeddings: The queries' vectors (a sparse batch embedder's ``sparse_embeddings``).
        :returns: ``{"documents": [[...], ...]}``: one list per query, in query order, best first.
        :raises ValueError: An invalid vector (named ``query_sparse_embeddings[i]``), ``top_k`` or threshold.
        """
        filters, top_k = self._run_settings(filters, top_k)
        threshold = self._run_threshold(score_threshold)
        hits = self.document_store.sparse_embedding_retrieval_batch(
            query_sparse_embeddings, filters=filters, top_k=top_k, return_embedding=self.return_embedding
        )
        return {"documents": above_threshold_lists(hits, threshold)}

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self,
        query_sparse_embeddings: list[SparseEmbedding],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
    ) -> dict[str, list[list[Document]]]:
        """Same as ``run``, in a worker thread so the event loop stays free while it scores."""
        return await asyncio.to_thread(self.run, query_sparse_embeddings, filters, top_k, score_threshold)
