"""Sparse query embedder: one query to a SPLADE-style ``SparseEmbedding`` (sentence-transformers' ``SparseEncoder``)."""

from typing import Any

from haystack import component
from haystack.dataclasses import SparseEmbedding

from components.checks import check_query
from components.embedders.sentence_transformers_sparse_common import SparseQueryEmbedderBase


@component
class SentenceTransformersSparseTextEmbedder(SparseQueryEmbedderBase):
    """Embeds one query with a sparse encoder's query side (``encode_query``), for a ``SparseEmbeddingRetriever``.

    Same parameters and output as sentence-transformers-haystack's class of that name, plus ``query_instruction``
    and ``max_active_dims`` (``components.embedders.sentence_transformers_sparse_common`` says why ours).

    ```python
    embedder = SentenceTransformersSparseTextEmbedder(model="prithivida/Splade_PP_en_v1")
    embedder.warm_up()
    vector = embedder.run(text="what causes scurvy?")["sparse_embedding"]  # SparseEmbedding(indices, values)
    ```
    """

    @component.output_types(sparse_embedding=SparseEmbedding)
    def run(self, text: str, query_instruction: str | None = None) -> dict[str, Any]:
        """Embed one query.

        :param text: The query: not blank, at most 1,048,576 characters, valid Unicode (``components.checks``).
        :param query_instruction: The instruction for this run, in place of the init one (``""``: none).
        :returns: ``{"sparse_embedding": SparseEmbedding}``: term ids of the model's vocabulary and their weights.
        :raises ValueError: ``text`` breaks the query rules, or ``query_instruction`` is not a string.
        """
        check_query(text)
        return {"sparse_embedding": self._queries([text], query_instruction)[0]}
