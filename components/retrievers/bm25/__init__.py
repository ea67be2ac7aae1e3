"""BM25 retrievers over BM25DocumentStore (one query, or a batch in one bm25s call).

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "retriever": ["BM25Retriever"],
    "batch_retriever": ["BM25BatchRetriever"],
}

if TYPE_CHECKING:
    from .batch_retriever import BM25BatchRetriever as BM25BatchRetriever
    from .retriever import BM25Retriever as BM25Retriever
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
