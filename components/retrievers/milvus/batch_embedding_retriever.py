"""MilvusBatchEmbeddingRetriever: dense retrieval of many queries in one Milvus search call (nq > 1)."""

from haystack import component

from components.retrievers.embedding_runs import BatchEmbeddingRuns
from components.retrievers.milvus.milvus_retriever_base import MilvusSearches


@component
class MilvusBatchEmbeddingRetriever(MilvusSearches, BatchEmbeddingRuns):
    """
    Retrieves the nearest documents for a batch of query embeddings (UltraRAG's ``retriever_batch_search``).

    All queries go to Milvus in one search request; the result for query i is what
    ``MilvusEmbeddingRetriever`` returns for it alone. Filters and ``top_k`` apply to every query.

    ```python
    retriever = MilvusBatchEmbeddingRetriever(MilvusDocumentStore(uri="index/milvus.db"), top_k=5)
    retriever.run(query_embeddings=embeddings)["documents"]  # one list of Documents per query
    ```
    """
