"""Corpus embedder for the seed's `infinity` backend, with the fingerprinted `.npy` embedding file.

Server handling as :class:`InfinityTextEmbedder` (a managed server, or one at `url`); documents, batching,
`concurrency` and the embedding file as :class:`OpenAIDocumentEmbedder`. The file's fingerprint names the
`infinity` backend and its pooling method, so a file written through another backend or pooling is refused
instead of silently mixed into this index.
"""

from typing import Any, ClassVar

from haystack import Document, component
from haystack.utils import Secret

from components.embedders.infinity_text_embedder import DEFAULT_INFINITY_KEY, SERVER_PARAMETERS, InfinityBackend
from components.embedders.openai_document_embedder import OpenAIDocumentEmbedder


@component
class InfinityDocumentEmbedder(InfinityBackend, OpenAIDocumentEmbedder):
    """Embeds Documents with the Infinity engine, optionally keeping a `.npy` file.

    ```python
    embedder = InfinityDocumentEmbedder(model_name_or_path="BAAI/bge-small-en-v1.5", embedding_path="emb.npy")
    docs = embedder.run(documents=docs)["documents"]  # a second run reads emb.npy back, no server needed
    embedder.close()
    ```
    """

    _init_parameters: ClassVar[tuple[str, ...]] = (
        *SERVER_PARAMETERS,
        "prefix",
        "suffix",
        "meta_fields_to_embed",
        "embedding_separator",
        "batch_size",
        "concurrency",
        "timeout",
        "max_retries",
        "backoff",
        "embedding_path",
        "overwrite",
        "progress_bar",
    )

    def __init__(
        self,
        *,
        model_name_or_path: str,
        url: str | None = None,
        api_key: Secret | None = DEFAULT_INFINITY_KEY,
        infinity_venv: str = ".venv-infinity",
        bettertransformer: bool = False,
        pooling_method: str = "auto",
        model_warmup: bool = False,
        trust_remote_code: bool = True,
        device: str = "auto",
        startup_timeout: float = 300.0,
        prefix: str = "",
        suffix: str = "",
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        batch_size: int = 32,
        concurrency: int = 4,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        embedding_path: str | None = None,
        overwrite: bool = False,
        progress_bar: bool = True,
    ) -> None:
        """Create the embedder; no server starts until `warm_up` or a `run` that must embed.

        Server parameters (`model_name_or_path` ... `startup_timeout`, and `batch_size` as the server's
        `--batch-size`): as in :class:`InfinityTextEmbedder`. Document parameters: as in
        :class:`OpenAIDocumentEmbedder`.
        :raises ValueError: An option outside its allowed range (the message names it and the range).
        """
        self._configure_infinity(
            model_name_or_path=model_name_or_path,
            url=url,
            infinity_venv=infinity_venv,
            bettertransformer=bettertransformer,
            pooling_method=pooling_method,
            model_warmup=model_warmup,
            trust_remote_code=trust_remote_code,
            device=device,
            startup_timeout=startup_timeout,
        )
        OpenAIDocumentEmbedder.__init__(
            self,
            model_name=model_name_or_path,
            base_url=url,
            api_key=api_key,
            prefix=prefix,
            suffix=suffix,
            meta_fields_to_embed=meta_fields_to_embed,
            embedding_separator=embedding_separator,
            batch_size=batch_size,
            concurrency=concurrency,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            embedding_path=embedding_path,
            overwrite=overwrite,
            progress_bar=progress_bar,
        )

    def fingerprint(self, documents: list[Document], texts: list[str]) -> dict[str, Any]:
        """The OpenAI embedder's fingerprint, naming this backend and the pooling that shapes every vector."""
        # Named, not super(): @component rebuilds the class, so the zero-argument super() of its body fails.
        base = OpenAIDocumentEmbedder.fingerprint(self, documents, texts)
        return {**base, "backend": "infinity", "pooling_method": self.pooling_method}
