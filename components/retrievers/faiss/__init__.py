"""FAISS embedding retrievers (one query, or a batch in one FAISS call).

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "embedding_retriever": ["FAISSEmbeddingRetriever"],
    "batch_embedding_retriever": ["FAISSBatchEmbeddingRetriever"],
}

if TYPE_CHECKING:
    from .batch_embedding_retriever import FAISSBatchEmbeddingRetriever as FAISSBatchEmbeddingRetriever
    from .embedding_retriever import FAISSEmbeddingRetriever as FAISSEmbeddingRetriever
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
