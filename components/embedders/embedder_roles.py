"""The three embedders of an embedding backend, by role, and the table that is the only way from a name to a class.

Every dense backend (``CLASSES``' keys) has a document embedder (the corpus: Documents in, vectors kept in an
embedding file), a query embedder (one ``text``) and a batch query embedder (``texts``). ``embedder_class``
imports the class of one of them by the backend's name: a name read from a file imports nothing else. Adding a
backend is its component files and one line of ``CLASSES``; which options UltraRAG's parameter file gives it is the
application's business (``needle_retrieval.ultrarag.embedder_spec``).
"""

import importlib
from enum import IntEnum

_MODULE = "components.embedders"


class EmbedderRole(IntEnum):
    """Which of a backend's embedders: the corpus's, one query's, or a batch of queries' (``CLASSES``'s order)."""

    DOCUMENT = 0
    QUERY = 1
    QUERY_BATCH = 2

    @classmethod
    def for_queries(cls, batch: bool) -> "EmbedderRole":
        """The query embedder's role: a batch of queries (``texts`` in) with BATCH, else one (``text`` in)."""
        return cls.QUERY_BATCH if batch else cls.QUERY

    @property
    def embeds_queries(self) -> bool:
        """Whether this embedder embeds queries (takes ``query_instruction``), not the corpus."""
        return self is not EmbedderRole.DOCUMENT


# backend -> the embedders of its roles (document, query, batch query: indexed by EmbedderRole), as "module.Class"
# under components.embedders.
CLASSES: dict[str, tuple[str, str, str]] = {
    "sentence_transformers": (
        "sentence_transformers_document_embedder.SentenceTransformersDocumentEmbedder",
        "sentence_transformers_text_embedder.SentenceTransformersTextEmbedder",
        "sentence_transformers_batch_text_embedder.SentenceTransformersBatchTextEmbedder",
    ),
    "infinity": (
        "infinity_document_embedder.InfinityDocumentEmbedder",
        "infinity_text_embedder.InfinityTextEmbedder",
        "infinity_batch_text_embedder.InfinityBatchTextEmbedder",
    ),
    "openai": (
        "openai_document_embedder.OpenAIDocumentEmbedder",
        "openai_text_embedder.OpenAITextEmbedder",
        "openai_batch_text_embedder.OpenAIBatchTextEmbedder",
    ),
}


# Learned sparse (SPLADE-style) backends, the same three roles: they give ``SparseEmbedding``s, for the sparse store
# (``components.stores.sparse``), so they are no dense backend (not in CLASSES, which parameter files choose from).
SPARSE_CLASSES: dict[str, tuple[str, str, str]] = {
    "sentence_transformers": (
        "sentence_transformers_sparse_document_embedder.SentenceTransformersSparseDocumentEmbedder",
        "sentence_transformers_sparse_text_embedder.SentenceTransformersSparseTextEmbedder",
        "sentence_transformers_sparse_batch_text_embedder.SentenceTransformersSparseBatchTextEmbedder",
    ),
    "tei": (
        "tei_sparse_document_embedder.TEISparseDocumentEmbedder",
        "tei_sparse_text_embedder.TEISparseTextEmbedder",
        "tei_sparse_batch_text_embedder.TEISparseBatchTextEmbedder",
    ),
}


def sparse_embedder_type(backend: str, role: EmbedderRole) -> str:
    """The qualified class name (a pipeline file's ``type``) of sparse BACKEND's embedder of ROLE; imports nothing."""
    return f"{_MODULE}.{SPARSE_CLASSES[backend][role]}"


def embedder_class(backend: str, role: EmbedderRole) -> type:
    """The class of BACKEND's embedder of ROLE (BACKEND one of ``CLASSES``' keys), imported now."""
    module, name = CLASSES[backend][role].split(".")
    cls: type = getattr(importlib.import_module(f"{_MODULE}.{module}"), name)
    return cls
