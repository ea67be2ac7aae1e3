"""Milvus document store: Milvus Lite on a local path, or a Milvus server or cluster by URL.

Submodules import on first use (Haystack's LazyImporter pattern), so importing the package does not load
pymilvus.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "document_store": ["MilvusDocumentStore"],
    "collection": ["MilvusCollectionError"],
    "connection": ["MilvusConnectionError", "MilvusVersionError"],
}

if TYPE_CHECKING:
    from .collection import MilvusCollectionError as MilvusCollectionError
    from .connection import MilvusConnectionError as MilvusConnectionError
    from .connection import MilvusVersionError as MilvusVersionError
    from .document_store import MilvusDocumentStore as MilvusDocumentStore
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
