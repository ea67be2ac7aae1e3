"""Retrievers over the learned sparse document store (``components.stores.sparse``): one query, a batch, and a
batch as fusion candidates.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "retriever": ["SparseEmbeddingRetriever"],
    "batch_retriever": ["SparseEmbeddingBatchRetriever"],
    "batch_candidate_retriever": ["SparseEmbeddingBatchCandidateRetriever"],
}

if TYPE_CHECKING:
    from .batch_candidate_retriever import (
        SparseEmbeddingBatchCandidateRetriever as SparseEmbeddingBatchCandidateRetriever,
    )
    from .batch_retriever import SparseEmbeddingBatchRetriever as SparseEmbeddingBatchRetriever
    from .retriever import SparseEmbeddingRetriever as SparseEmbeddingRetriever
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
