"""Batch query embedder for the seed's `infinity` backend (a managed Infinity server, or one at `url`).

Options, server handling and serialization as :class:`InfinityTextEmbedder`; `texts` in and `embeddings` out, in
requests of `batch_size` with up to `concurrency` in flight, as :class:`OpenAIBatchTextEmbedder`.
"""

from haystack import component

from components.embedders.infinity_text_embedder import InfinityQueryEmbedderBase
from components.embedders.openai_batch_text_embedder import OpenAIBatchTextEmbedder


@component
class InfinityBatchTextEmbedder(InfinityQueryEmbedderBase, OpenAIBatchTextEmbedder):
    """Embeds a list of query strings with the Infinity engine.

    ```python
    embedder = InfinityBatchTextEmbedder(model_name_or_path="BAAI/bge-small-en-v1.5", batch_size=64)
    vectors = embedder.run(texts=["what causes scurvy?", "is coffee healthy?"])["embeddings"]
    embedder.close()
    ```
    """
