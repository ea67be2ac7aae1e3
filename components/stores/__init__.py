"""Stores components."""

from components.stores.faiss_document_store import FAISSDocumentStore

__all__ = ["FAISSDocumentStore"]
