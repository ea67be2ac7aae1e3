"""Retrievers that query a served index over UltraRAG's deploy protocol (``POST /search``), one query or a batch."""

from .batch_retriever import UltraRAGRemoteBatchRetriever
from .retriever import UltraRAGRemoteRetriever

__all__ = ["UltraRAGRemoteBatchRetriever", "UltraRAGRemoteRetriever"]
