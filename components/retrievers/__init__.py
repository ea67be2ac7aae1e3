"""Retrievers components."""

from components.retrievers.faiss_batch_embedding_retriever import FAISSBatchEmbeddingRetriever  # noqa: F401
from components.retrievers.faiss_embedding_retriever import FAISSEmbeddingRetriever  # noqa: F401
from components.retrievers.bm25_batch_retriever import BM25BatchRetriever  # noqa: F401
from components.retrievers.bm25_retriever import BM25Retriever  # noqa: F401
