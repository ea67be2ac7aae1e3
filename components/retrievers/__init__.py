"""Retrievers: FAISS embedding retrievers and BM25 retrievers, single query and batch, one subpackage per backend.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "faiss": ["FAISSEmbeddingRetriever", "FAISSBatchEmbeddingRetriever"],
    "bm25": ["BM25Retriever", "BM25BatchRetriever"],
}

if TYPE_CHECKING:
    from .bm25 import BM25BatchRetriever as BM25BatchRetriever
    from .bm25 import BM25Retriever as BM25Retriever
    from .faiss import FAISSBatchEmbeddingRetriever as FAISSBatchEmbeddingRetriever
    from .faiss import FAISSEmbeddingRetriever as FAISSEmbeddingRetriever
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
