"""Sparse batch query embedder: many queries, one ``encode_query`` call (the batch twin of the text embedder)."""

from typing import Any

from haystack import component
from haystack.dataclasses import SparseEmbedding

from components.checks import check_queries
from components.embedders.sentence_transformers_sparse_common import SparseQueryEmbedderBase


@component
class SentenceTransformersSparseBatchTextEmbedder(SparseQueryEmbedderBase):
    """Embeds a list of queries; same options as ``SentenceTransformersSparseTextEmbedder``, for the batch retriever.

    ```python
    embedder = SentenceTransformersSparseBatchTextEmbedder(model="prithivida/Splade_PP_en_v1")
    vectors = embedder.run(texts=["what causes scurvy?", "is coffee healthy?"])["sparse_embeddings"]
    ```
    """

    @component.output_types(sparse_embeddings=list[SparseEmbedding])
    def run(self, texts: list[str], query_instruction: str | None = None) -> dict[str, Any]:
        """Embed every query in ``texts``, keeping their order.

        :param texts: The queries, each under the query rules of ``components.checks`` (named ``queries[i]``); an
            empty list gives an empty result without loading the model.
        :param query_instruction: The instruction for this run, in place of the init one (``""``: none).
        :returns: ``{"sparse_embeddings": [SparseEmbedding, ...]}``, one per text.
        """
        check_queries(texts)
        return {"sparse_embeddings": self._queries(texts, query_instruction)}
