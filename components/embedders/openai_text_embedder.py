"""Query embedder for any OpenAI-compatible embedding server (OpenAI, Infinity, vLLM, TEI, ...).

It does what Haystack's `OpenAITextEmbedder` does -- same `text` input, `embedding` and `meta` outputs, a `Secret`
API key serialized as an environment-variable reference, `warm_up`/`warm_up_async`/`close` for the SDK clients --
so it drops into the same search pipelines. It is not a subclass: Haystack's parameters are named differently
(`model`, `api_base_url`) from the UltraRAG seed's `model_name` and `base_url`, and the request path (the SDK's
own retries, an unchecked body) is exactly what `openai_common` replaces. Added: the key from `OPENAI_API_KEY` or
`RETRIEVER_API_KEY`, `query_instruction` (as our sentence-transformers query embedder: an init parameter, and a run
input that replaces it for one run), the query checks every
mode shares, retries with back-off, and a check that the answer holds one finite vector.
"""

from typing import Any, ClassVar

from haystack import component
from haystack.utils import Secret

from components.checks import check_query, run_instruction
from components.embedders.openai_common import DEFAULT_API_KEY, DEFAULT_MODEL, OpenAIEmbedderBase, check_string


class OpenAIQueryEmbedderBase(OpenAIEmbedderBase):
    """Options and serialization shared by the single-query and the batch-query embedder."""

    _init_parameters: ClassVar[tuple[str, ...]] = (
        "model_name",
        "base_url",
        "api_key",
        "dimensions",
        "query_instruction",
        "prefix",
        "suffix",
        "batch_size",
        "concurrency",
        "timeout",
        "max_retries",
        "backoff",
    )

    def __init__(
        self,
        *,
        model_name: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: Secret | None = DEFAULT_API_KEY,
        dimensions: int | None = None,
        query_instruction: str = "",
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        concurrency: int = 4,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        """Create the embedder; no connection is made until the first `run`.

        :param model_name: The model the server should use (the `model` field of each request).
        :param base_url: The API root, e.g. ``http://127.0.0.1:7997/v1``; None: OpenAI (or `OPENAI_BASE_URL`).
        :param api_key: Sent as ``Authorization: Bearer``; by default the first of `OPENAI_API_KEY` and
            `RETRIEVER_API_KEY` that is set. Required for OpenAI itself; a self-hosted server may need none.
        :param dimensions: Ask for vectors of this width (1..65536; models with Matryoshka training such as
            text-embedding-3); answers of another width are refused. None: the model's own width.
        :param query_instruction: Text put before every query (the seed's `query_instruction`), before `prefix`; a
            run's `query_instruction` replaces it for that run.
        :param prefix: Text put before every query, after `query_instruction`.
        :param suffix: Text put after every query.
        :param batch_size: Queries per request, 1..2048 (OpenAI's limit); used by the batch embedder.
        :param concurrency: Requests in flight at once, 1..64; used by the batch embedder.
        :param timeout: Seconds for each request with its retries and the waits between them, from sending
            it to the last byte of the answer (a deadline, not per read), (0, 3600].
        :param max_retries: Extra attempts after a timeout, a lost connection, 408/409/429 or 5xx, 0..10.
        :param backoff: Seconds before the first retry, doubled each time, 0..60.
        :raises ValueError: An option outside its allowed range (the message names it and the range).
        """
        self._configure(
            model_name=model_name,
            base_url=base_url,
            api_key=api_key,
            dimensions=dimensions,
            prefix=prefix,
            suffix=suffix,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            batch_size=batch_size,
            concurrency=concurrency,
        )
        self.query_instruction = check_string("query_instruction", query_instruction)

    def _query_texts(self, texts: list[str], query_instruction: str | None) -> list[str]:
        """The exact strings embedded for TEXTS: instruction, prefix, text, suffix. A run's `query_instruction`
        replaces the init one (never adds to it; `""`: none); None keeps the init one.

        :raises ValueError: `query_instruction` is neither None nor a string.
        """
        instruction = run_instruction(self.query_instruction, query_instruction)
        return [instruction + self.prefix + text + self.suffix for text in texts]


@component
class OpenAITextEmbedder(OpenAIQueryEmbedderBase):
    """Embeds one query string through an OpenAI-compatible `/embeddings` endpoint.

    ```python
    embedder = OpenAITextEmbedder(model_name="bge-small-en-v1.5", base_url="http://127.0.0.1:7997/v1")
    vector = embedder.run(text="what causes scurvy?")["embedding"]
    ```
    """

    @component.output_types(embedding=list[float], meta=dict[str, Any])
    def run(self, text: str, query_instruction: str | None = None) -> dict[str, Any]:
        """Embed one query.

        :param text: The query: not blank, at most 1,048,576 characters, valid Unicode (as in every mode).
        :param query_instruction: The instruction for this run, in place of the init parameter's (never on top of
            it; `""`: none); None: the init parameter's.
        :returns: `{"embedding": list[float], "meta": {"model", "usage"}}` (meta as the server reports it).
        :raises ValueError: `text` breaks the query rules of `components.checks` (a list is pointed to the batch
            embedder), or `query_instruction` is not a string.
        :raises OpenAIEmbeddingError: The server failed after retries, refused the key, or sent no usable vector.
        """
        check_query(text)
        matrix, meta = self._embed(self._query_texts([text], query_instruction))
        return {"embedding": matrix[0].tolist(), "meta": meta}

    @component.output_types(embedding=list[float], meta=dict[str, Any])
    async def run_async(self, text: str, query_instruction: str | None = None) -> dict[str, Any]:
        """Async twin of `run`, with the same inputs, output and errors."""
        check_query(text)
        matrix, meta = await self._embed_async(self._query_texts([text], query_instruction))
        return {"embedding": matrix[0].tolist(), "meta": meta}
