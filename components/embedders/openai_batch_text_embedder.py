"""Batch query embedder for OpenAI-compatible servers (the seed's `retriever_batch_search` front half).

Many queries go out in requests of `batch_size`, up to `concurrency` requests in flight, and come back in
input order; the same options and serialization as :class:`OpenAITextEmbedder`, with `texts` in and
`embeddings` out like our sentence-transformers batch embedder.
"""

from typing import Any

from haystack import component

from components.checks import check_queries
from components.embedders.openai_text_embedder import OpenAIQueryEmbedderBase


@component
class OpenAIBatchTextEmbedder(OpenAIQueryEmbedderBase):
    """Embeds a list of query strings through an OpenAI-compatible `/embeddings` endpoint.

    ```python
    embedder = OpenAIBatchTextEmbedder(base_url="http://127.0.0.1:7997/v1", batch_size=64, concurrency=8)
    vectors = embedder.run(texts=["what causes scurvy?", "is coffee healthy?"])["embeddings"]
    ```
    """

    @component.output_types(embeddings=list[list[float]], meta=dict[str, Any])
    def run(self, texts: list[str], query_instruction: str | None = None) -> dict[str, Any]:
        """Embed every query in `texts`, keeping their order.

        :param texts: The queries, each under the query rules of `components.checks`; an empty list gives an empty
            result without contacting the server.
        :param query_instruction: The instruction for this run, in place of the init parameter's (never on top of
            it; `""`: none); None: the init parameter's.
        :returns: `{"embeddings": list[list[float]], "meta": {"model", "usage"}}`, row i for `texts[i]`; usage is
            summed over the requests.
        :raises ValueError: `texts` is not a list, or an item breaks the query rules (named `queries[i]`), or
            `query_instruction` is not a string.
        :raises OpenAIEmbeddingError: A request failed after retries, or an answer was not one vector per query.
        """
        check_queries(texts)
        queries = self._query_texts(texts, query_instruction)
        if not queries:
            return {"embeddings": [], "meta": {}}
        matrix, meta = self._embed(queries)
        return {"embeddings": matrix.tolist(), "meta": meta}

    @component.output_types(embeddings=list[list[float]], meta=dict[str, Any])
    async def run_async(self, texts: list[str], query_instruction: str | None = None) -> dict[str, Any]:
        """Async twin of `run`, with the same inputs, output and errors."""
        check_queries(texts)
        queries = self._query_texts(texts, query_instruction)
        if not queries:
            return {"embeddings": [], "meta": {}}
        matrix, meta = await self._embed_async(queries)
        return {"embeddings": matrix.tolist(), "meta": meta}
