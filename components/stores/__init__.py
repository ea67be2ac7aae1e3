"""Document stores: FAISS (dense vectors + SQLite documents) and BM25 (bm25s), Milvus, one subpackage per backend.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "faiss": ["FAISSDocumentStore"],
    "bm25": ["BM25DocumentStore"],
    "milvus": ["MilvusDocumentStore"],
}

if TYPE_CHECKING:
    from .bm25 import BM25DocumentStore as BM25DocumentStore
    from .faiss import FAISSDocumentStore as FAISSDocumentStore
    from .milvus import MilvusDocumentStore as MilvusDocumentStore
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
