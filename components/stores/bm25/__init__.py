"""BM25 document store on bm25s: English, Chinese and CJK tokenizers, incremental, crash-safe.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "document_store": ["BM25DocumentStore"],
}

if TYPE_CHECKING:
    from .document_store import BM25DocumentStore as BM25DocumentStore
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
