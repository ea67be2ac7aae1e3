"""MilvusEmbeddingRetriever: dense retrieval of one query from a MilvusDocumentStore."""

from haystack import component

from components.retrievers.embedding_runs import SingleEmbeddingRuns
from components.retrievers.milvus.milvus_retriever_base import MilvusSearches


@component
class MilvusEmbeddingRetriever(MilvusSearches, SingleEmbeddingRuns):
    """
    Retrieves the documents nearest to a query embedding from a Milvus collection (Lite or server).

    Scores are higher-is-better (inner product by default, as in the seed; cosine; or the negated L2
    distance) and every document carries ``meta["retrieval_type"] = "dense"``, so ``MixRetrieveRanker`` takes
    these results as it takes FAISS's. Filters run inside Milvus.

    ```python
    store = MilvusDocumentStore(uri="index/milvus.db")
    retriever = MilvusEmbeddingRetriever(store, top_k=5)
    retriever.run(query_embedding=text_embedder.run("what is Milvus?")["embedding"])["documents"]
    ```
    """
