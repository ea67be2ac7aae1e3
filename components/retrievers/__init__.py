"""Retrievers components."""

from components.retrievers.faiss_batch_embedding_retriever import FAISSBatchEmbeddingRetriever  # noqa: F401
from components.retrievers.faiss_embedding_retriever import FAISSEmbeddingRetriever  # noqa: F401
