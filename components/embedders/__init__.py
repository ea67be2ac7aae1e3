"""Embedders: sentence-transformers query, batch-query and document embedders, and the .npy embedding file."""

from components.embedders.embedding_file import EmbeddingFileError, load_embeddings, save_embeddings
from components.embedders.model_resolver import resolve_model
from components.embedders.sentence_transformers_batch_text_embedder import SentenceTransformersBatchTextEmbedder
from components.embedders.sentence_transformers_document_embedder import SentenceTransformersDocumentEmbedder
from components.embedders.sentence_transformers_text_embedder import SentenceTransformersTextEmbedder

__all__ = [
    "EmbeddingFileError",
    "SentenceTransformersBatchTextEmbedder",
    "SentenceTransformersDocumentEmbedder",
    "SentenceTransformersTextEmbedder",
    "load_embeddings",
    "resolve_model",
    "save_embeddings",
]
