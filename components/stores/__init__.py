"""Document stores: FAISS (vectors + SQLite documents), BM25 (bm25s), learned sparse, Milvus; one subpackage each.

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
    "sparse": ["SparseDocumentStore"],
}

if TYPE_CHECKING:
    from .bm25 import BM25DocumentStore as BM25DocumentStore
    from .faiss import FAISSDocumentStore as FAISSDocumentStore
    from .milvus import MilvusDocumentStore as MilvusDocumentStore
    from .sparse import SparseDocumentStore as SparseDocumentStore
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
