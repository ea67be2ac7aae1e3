"""Sparse batch query embedder on a TEI server's ``/embed_sparse`` route: many queries, ``batch_size`` per request."""

from typing import Any

from haystack import component
from haystack.dataclasses import SparseEmbedding

from components.checks import check_queries
from components.embedders.tei_sparse_common import TEISparseQueryBase


@component
class TEISparseBatchTextEmbedder(TEISparseQueryBase):
    """Embeds a list of queries with a SPLADE model served by TEI, ``batch_size`` per request.

    ```python
    vectors = TEISparseBatchTextEmbedder(url="http://127.0.0.1:8080").run(texts=["a", "b"])["sparse_embeddings"]
    ```
    """

    @component.output_types(sparse_embeddings=list[SparseEmbedding])
    def run(self, texts: list[str], query_instruction: str | None = None) -> dict[str, Any]:
        """Embed every query in ``texts``, keeping their order; an empty list sends nothing.

        :raises ValueError: An item breaks the query rules (named ``queries[i]``).
        :raises TEISparseError: The server failed or answered out of TEI's format.
        """
        check_queries(texts)
        return {"sparse_embeddings": self._queries(texts, query_instruction)}
