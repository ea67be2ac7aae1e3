"""Embedders: sentence-transformers query, batch-query and document embedders, and the .npy embedding file.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "embedding_file": ["EmbeddingFileError", "load_embeddings", "save_embeddings"],
    "infinity_batch_text_embedder": ["InfinityBatchTextEmbedder"],
    "infinity_document_embedder": ["InfinityDocumentEmbedder"],
    "infinity_server": ["InfinityServer", "InfinityServerError", "InfinitySettings"],
    "infinity_text_embedder": ["InfinityTextEmbedder"],
    "model_resolver": ["resolve_model"],
    "openai_batch_text_embedder": ["OpenAIBatchTextEmbedder"],
    "openai_document_embedder": ["OpenAIDocumentEmbedder"],
    "openai_protocol": ["OpenAIEmbeddingError"],
    "openai_text_embedder": ["OpenAITextEmbedder"],
    "sentence_transformers_batch_text_embedder": ["SentenceTransformersBatchTextEmbedder"],
    "sentence_transformers_document_embedder": ["SentenceTransformersDocumentEmbedder"],
    "sentence_transformers_image_embedder": ["ImageEmbeddingError", "SentenceTransformersImageEmbedder"],
    "sentence_transformers_text_embedder": ["SentenceTransformersTextEmbedder"],
    "sentence_transformers_sparse_document_embedder": ["SentenceTransformersSparseDocumentEmbedder"],
    "sentence_transformers_sparse_text_embedder": ["SentenceTransformersSparseTextEmbedder"],
    "sentence_transformers_sparse_batch_text_embedder": ["SentenceTransformersSparseBatchTextEmbedder"],
    "tei_sparse_document_embedder": ["TEISparseDocumentEmbedder"],
    "tei_sparse_text_embedder": ["TEISparseTextEmbedder"],
    "tei_sparse_batch_text_embedder": ["TEISparseBatchTextEmbedder"],
}

if TYPE_CHECKING:
    from .embedding_file import EmbeddingFileError as EmbeddingFileError
    from .embedding_file import load_embeddings as load_embeddings
    from .embedding_file import save_embeddings as save_embeddings
    from .infinity_batch_text_embedder import InfinityBatchTextEmbedder as InfinityBatchTextEmbedder
    from .infinity_document_embedder import InfinityDocumentEmbedder as InfinityDocumentEmbedder
    from .infinity_server import InfinityServer as InfinityServer
    from .infinity_server import InfinityServerError as InfinityServerError
    from .infinity_server import InfinitySettings as InfinitySettings
    from .infinity_text_embedder import InfinityTextEmbedder as InfinityTextEmbedder
    from .model_resolver import resolve_model as resolve_model
    from .openai_batch_text_embedder import OpenAIBatchTextEmbedder as OpenAIBatchTextEmbedder
    from .openai_document_embedder import OpenAIDocumentEmbedder as OpenAIDocumentEmbedder
    from .openai_protocol import OpenAIEmbeddingError as OpenAIEmbeddingError
    from .openai_text_embedder import OpenAITextEmbedder as OpenAITextEmbedder
    from .sentence_transformers_batch_text_embedder import (
        SentenceTransformersBatchTextEmbedder as SentenceTransformersBatchTextEmbedder,
    )
    from .sentence_transformers_document_embedder import (
        SentenceTransformersDocumentEmbedder as SentenceTransformersDocumentEmbedder,
    )
    from .sentence_transformers_image_embedder import ImageEmbeddingError as ImageEmbeddingError
    from .sentence_transformers_image_embedder import (
        SentenceTransformersImageEmbedder as SentenceTransformersImageEmbedder,
    )
    from .sentence_transformers_sparse_batch_text_embedder import (
        SentenceTransformersSparseBatchTextEmbedder as SentenceTransformersSparseBatchTextEmbedder,
    )
    from .sentence_transformers_sparse_document_embedder import (
        SentenceTransformersSparseDocumentEmbedder as SentenceTransformersSparseDocumentEmbedder,
    )
    from .sentence_transformers_sparse_text_embedder import (
        SentenceTransformersSparseTextEmbedder as SentenceTransformersSparseTextEmbedder,
    )
    from .sentence_transformers_text_embedder import (
        SentenceTransformersTextEmbedder as SentenceTransformersTextEmbedder,
    )
    from .tei_sparse_batch_text_embedder import TEISparseBatchTextEmbedder as TEISparseBatchTextEmbedder
    from .tei_sparse_document_embedder import TEISparseDocumentEmbedder as TEISparseDocumentEmbedder
    from .tei_sparse_text_embedder import TEISparseTextEmbedder as TEISparseTextEmbedder
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
