"""Stores components."""

from components.stores.faiss_document_store import FAISSDocumentStore  # noqa: F401
