"""Milvus retrievers: dense, BM25, learned sparse and Milvus hybrid, each for one query or a batch in one Milvus call.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, pymilvus) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "embedding_retriever": ["MilvusEmbeddingRetriever"],
    "batch_embedding_retriever": ["MilvusBatchEmbeddingRetriever"],
    "bm25_retriever": ["MilvusBM25Retriever"],
    "bm25_batch_retriever": ["MilvusBM25BatchRetriever"],
    "hybrid_retriever": ["MilvusHybridRetriever"],
    "hybrid_batch_retriever": ["MilvusHybridBatchRetriever"],
    "sparse_embedding_retriever": ["MilvusSparseEmbeddingRetriever"],
    "sparse_embedding_batch_retriever": ["MilvusSparseEmbeddingBatchRetriever"],
}

if TYPE_CHECKING:
    from .batch_embedding_retriever import MilvusBatchEmbeddingRetriever as MilvusBatchEmbeddingRetriever
    from .bm25_batch_retriever import MilvusBM25BatchRetriever as MilvusBM25BatchRetriever
    from .bm25_retriever import MilvusBM25Retriever as MilvusBM25Retriever
    from .embedding_retriever import MilvusEmbeddingRetriever as MilvusEmbeddingRetriever
    from .hybrid_batch_retriever import MilvusHybridBatchRetriever as MilvusHybridBatchRetriever
    from .hybrid_retriever import MilvusHybridRetriever as MilvusHybridRetriever
    from .sparse_embedding_batch_retriever import (
        MilvusSparseEmbeddingBatchRetriever as MilvusSparseEmbeddingBatchRetriever,
    )
    from .sparse_embedding_retriever import MilvusSparseEmbeddingRetriever as MilvusSparseEmbeddingRetriever
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
