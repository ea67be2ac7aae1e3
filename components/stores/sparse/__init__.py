"""Learned sparse (SPLADE-style) document store: an impact-scored inverted index, crash-safe and verified.

Submodules import on first use (Haystack's LazyImporter pattern), as the BM25 store's do.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "document_store": ["SparseDocumentStore"],
}

if TYPE_CHECKING:
    from .document_store import SparseDocumentStore as SparseDocumentStore
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
