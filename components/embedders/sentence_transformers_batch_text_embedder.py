"""Batch query embedder: many queries, one `encode` call (the seed's `retriever_batch_search` front half).

Embedding queries one by one through `SentenceTransformersTextEmbedder` pays one forward pass per query; here
the whole list goes through sentence-transformers in batches of `batch_size` and comes back as one matrix.
With several `gpu_ids` the texts are spread over a multi-process pool, one process per GPU.
"""

from typing import Any

from haystack import component

from components.embedders.sentence_transformers_text_embedder import SentenceTransformersTextEmbedder


@component
class SentenceTransformersBatchTextEmbedder(SentenceTransformersTextEmbedder):
    """Embeds a list of query strings; same options as :class:`SentenceTransformersTextEmbedder`.

    ```python
    embedder = SentenceTransformersBatchTextEmbedder(query_instruction="query: ", normalize_embeddings=True)
    embedder.warm_up()
    vectors = embedder.run(texts=["what causes scurvy?", "is coffee healthy?"])["embeddings"]
    ```
    """

    @component.output_types(embeddings=list[list[float]])
    def run(self, texts: list[str]) -> dict[str, Any]:  # type: ignore[override] -- a batch socket, by design
        """Embed every query in `texts`, keeping their order.

        :param texts: The queries; an empty list gives an empty result without loading the model.
        :returns: `{"embeddings": list[list[float]]}`, row i for `texts[i]`.
        :raises TypeError: `texts` is not a list of strings (the message names the first bad position).
        """
        if isinstance(texts, str) or not isinstance(texts, list):
            raise TypeError(
                f"SentenceTransformersBatchTextEmbedder.run expects texts: list[str], got {type(texts).__name__}; "
                "use SentenceTransformersTextEmbedder for a single query"
            )
        for position, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{position}] must be a string, got {type(text).__name__}")
        if not texts:
            return {"embeddings": []}
        queries = [self._query_text(text) for text in texts]
        embeddings = self._encode(queries, show_progress_bar=self.progress_bar)
        return {"embeddings": embeddings.tolist()}
