"""Stores components."""

from components.stores.faiss_document_store import FAISSDocumentStore  # noqa: F401
from components.stores.bm25_document_store import BM25DocumentStore  # noqa: F401
