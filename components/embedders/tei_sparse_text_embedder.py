"""Sparse query embedder on a TEI server's ``/embed_sparse`` route: one query to a ``SparseEmbedding``."""

from typing import Any

from haystack import component
from haystack.dataclasses import SparseEmbedding

from components.checks import check_query
from components.embedders.tei_sparse_common import TEISparseQueryBase


@component
class TEISparseTextEmbedder(TEISparseQueryBase):
    """Embeds one query with a SPLADE model served by TEI, for a ``SparseEmbeddingRetriever``.

    ```python
    embedder = TEISparseTextEmbedder(url="http://127.0.0.1:8080")
    vector = embedder.run(text="what causes scurvy?")["sparse_embedding"]
    ```
    """

    @component.output_types(sparse_embedding=SparseEmbedding)
    def run(self, text: str, query_instruction: str | None = None) -> dict[str, Any]:
        """Embed one query (not blank, at most 1,048,576 characters, valid Unicode).

        :raises ValueError: ``text`` breaks the query rules of ``components.checks``.
        :raises TEISparseError: The server failed or answered out of TEI's format.
        """
        check_query(text)
        return {"sparse_embedding": self._queries([text], query_instruction)[0]}
