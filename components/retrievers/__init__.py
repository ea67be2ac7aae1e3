"""Retrievers: FAISS embedding, BM25, learned sparse and Milvus (dense, BM25, learned sparse, hybrid), remote
(UltraRAG's /search), single and batch.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "faiss": ["FAISSEmbeddingRetriever", "FAISSBatchEmbeddingRetriever"],
    "bm25": ["BM25Retriever", "BM25BatchRetriever"],
    "milvus": [
        "MilvusEmbeddingRetriever",
        "MilvusBatchEmbeddingRetriever",
        "MilvusBM25Retriever",
        "MilvusBM25BatchRetriever",
        "MilvusHybridRetriever",
        "MilvusHybridBatchRetriever",
        "MilvusSparseEmbeddingRetriever",
        "MilvusSparseEmbeddingBatchRetriever",
    ],
    "remote": ["UltraRAGRemoteRetriever", "UltraRAGRemoteBatchRetriever"],
    "sparse": ["SparseEmbeddingRetriever", "SparseEmbeddingBatchRetriever", "SparseEmbeddingBatchCandidateRetriever"],
}

if TYPE_CHECKING:
    from .bm25 import BM25BatchRetriever as BM25BatchRetriever
    from .bm25 import BM25Retriever as BM25Retriever
    from .faiss import FAISSBatchEmbeddingRetriever as FAISSBatchEmbeddingRetriever
    from .faiss import FAISSEmbeddingRetriever as FAISSEmbeddingRetriever
    from .milvus import MilvusBatchEmbeddingRetriever as MilvusBatchEmbeddingRetriever
    from .milvus import MilvusBM25BatchRetriever as MilvusBM25BatchRetriever
    from .milvus import MilvusBM25Retriever as MilvusBM25Retriever
    from .milvus import MilvusEmbeddingRetriever as MilvusEmbeddingRetriever
    from .milvus import MilvusHybridBatchRetriever as MilvusHybridBatchRetriever
    from .milvus import MilvusHybridRetriever as MilvusHybridRetriever
    from .milvus import MilvusSparseEmbeddingBatchRetriever as MilvusSparseEmbeddingBatchRetriever
    from .milvus import MilvusSparseEmbeddingRetriever as MilvusSparseEmbeddingRetriever
    from .remote import UltraRAGRemoteBatchRetriever as UltraRAGRemoteBatchRetriever
    from .remote import UltraRAGRemoteRetriever as UltraRAGRemoteRetriever
    from .sparse import SparseEmbeddingBatchCandidateRetriever as SparseEmbeddingBatchCandidateRetriever
    from .sparse import SparseEmbeddingBatchRetriever as SparseEmbeddingBatchRetriever
    from .sparse import SparseEmbeddingRetriever as SparseEmbeddingRetriever
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
