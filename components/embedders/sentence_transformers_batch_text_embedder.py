"""Batch query embedder: many queries, one `encode` call (the seed's `retriever_batch_search` front half).

Embedding queries one by one through `SentenceTransformersTextEmbedder` pays one forward pass per query; here
the whole list goes through sentence-transformers in batches of `batch_size` and comes back as one matrix.
With several `gpu_ids` the texts are spread over a multi-process pool, one process per GPU.
"""

from typing import Any

import numpy as np
from haystack import component

from components.checks import check_queries
from components.embedders.sentence_transformers_common import SentenceTransformersQueryEmbedderBase


@component
class SentenceTransformersBatchTextEmbedder(SentenceTransformersQueryEmbedderBase):
    """Embeds a list of query strings; same options as :class:`SentenceTransformersTextEmbedder`.

    Both share :class:`SentenceTransformersQueryEmbedderBase`; this one is not a single-text embedder, so it
    does not derive from one: its input is `texts` (a list) and its output `embeddings` (one row per text).

    ```python
    embedder = SentenceTransformersBatchTextEmbedder(query_instruction="query: ", normalize_embeddings=True)
    embedder.warm_up()
    vectors = embedder.run(texts=["what causes scurvy?", "is coffee healthy?"])["embeddings"]
    ```
    """

    _output_socket = ("embeddings", list[list[float]])

    def run(self, texts: list[str], query_instruction: str | None = None) -> dict[str, Any]:
        """Embed every query in `texts`, keeping their order.

        :param texts: The queries, each under the query rules of `components.checks`; an empty list gives an empty
            result without loading the model.
        :param query_instruction: The instruction for this run, in place of the init parameter's (never on top of
            it; `""`: none); None: the init parameter's.
        :returns: `{"embeddings": list[list[float]]}`, row i for `texts[i]` (one (N, dim) numpy array with
            `as_array`).
        :raises ValueError: `texts` is not a list, or an item breaks the query rules (named `queries[i]`, with the
            same message as the BM25 batch retriever and the batch ranker), or `query_instruction` is not a string.
        """
        check_queries(texts)
        queries = self._query_texts(texts, query_instruction)
        if not queries:
            return {"embeddings": np.empty((0, 0), dtype=np.float32) if self.as_array else []}
        embeddings = self._encode(queries, show_progress_bar=self.progress_bar)
        return {"embeddings": embeddings if self.as_array else embeddings.tolist()}
