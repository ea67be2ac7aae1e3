"""FAISSBatchEmbeddingRetriever: dense retrieval of many queries with one vectorised FAISS call."""

from haystack import component

from components.retrievers.embedding_runs import BatchEmbeddingRuns
from components.retrievers.faiss.embedding_retriever import FAISSRetrieverBase


@component
class FAISSBatchEmbeddingRetriever(FAISSRetrieverBase, BatchEmbeddingRuns):
    """
    Retrieves the nearest documents for a batch of query embeddings (UltraRAG's ``retriever_batch_search``).

    All queries go to FAISS in one call, which lets FAISS use matrix-matrix products and its threads; the
    result for query i is exactly what ``FAISSEmbeddingRetriever`` returns for it alone. Filters and
    ``top_k`` apply to every query of the batch.

    ```python
    retriever = FAISSBatchEmbeddingRetriever(FAISSDocumentStore(path="index_dir"), top_k=5)
    retriever.run(query_embeddings=embeddings)["documents"]  # one list of Documents per query
    ```
    """
