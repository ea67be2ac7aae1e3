"""Corpus embedder: Haystack's `SentenceTransformersDocumentEmbedder` plus the seed's corpus options.

Added on top of Haystack's component (all its parameters keep their meaning):

* `prompt_name` / `task` (seed `psg_prompt_name` / `psg_task`) and `gpu_ids` (multi-process pool over GPUs);
* `encode_chunk_size` -- the corpus is encoded this many texts at a time, bounding the memory
  sentence-transformers holds per call; the progress bar counts texts batch by batch across chunks, and so does
  `progress_callback`, an attribute for code that shows progress its own way (`needle index`);
* `embedding_path` / `overwrite` -- the seed's `.npy` (float32, shape (N, dim), row i = input document i),
  written atomically with a fingerprint sidecar (see `embedding_file`). An existing file is reused only when
  it was built by the same model and options from the same ids and texts; anything else is an error that says
  what differs. While a reusable file is present, `warm_up` does not load the model at all.

Embeddings come back from one `encode` call per chunk as a numpy matrix and are attached row by row, so the
wrapper adds next to nothing to sentence-transformers' own time.
"""

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component
from haystack.utils import ComponentDevice, Secret
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder as HaystackSentenceTransformersDocumentEmbedder,
)
from tqdm.auto import tqdm

from components.embedders.embedding_file import (
    build_fingerprint,
    embedded_texts,
    load_or_encode,
    reusable,
)
from components.embedders.embedding_file_stream import EmbeddingFileStream, check_chunk
from components.embedders.sentence_transformers_common import (
    DEFAULT_MODEL,
    Backend,
    Embeddings,
    Precision,
    SentenceTransformersEncodingMixin,
    validate_options,
)


@component
class SentenceTransformersDocumentEmbedder(
    SentenceTransformersEncodingMixin, HaystackSentenceTransformersDocumentEmbedder
):
    """Embeds Documents with a sentence-transformers model, optionally keeping the matrix in a `.npy` file.

    ```python
    embedder = SentenceTransformersDocumentEmbedder(normalize_embeddings=True, embedding_path="emb/scifact.npy")
    embedder.warm_up()
    docs = embedder.run(documents=docs)["documents"]  # second run: read back from emb/scifact.npy
    ```
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        device: ComponentDevice | None = None,
        token: Secret | None = Secret.from_env_var(["HF_API_TOKEN", "HF_TOKEN"], strict=False),
        prompt_name: str | None = None,
        task: str | None = None,
        gpu_ids: list[int] | None = None,
        encode_chunk_size: int = 4096,
        embedding_path: str | None = None,
        overwrite: bool = False,
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        progress_bar: bool = True,
        normalize_embeddings: bool = False,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        trust_remote_code: bool = False,
        local_files_only: bool = False,
        truncate_dim: int | None = None,
        model_kwargs: dict[str, Any] | None = None,
        tokenizer_kwargs: dict[str, Any] | None = None,
        config_kwargs: dict[str, Any] | None = None,
        precision: Precision = "float32",
        encode_kwargs: dict[str, Any] | None = None,
        backend: Backend = "torch",
        revision: str | None = None,
        quantization_ranges: list[list[float]] | None = None,
    ) -> None:
        """Create the embedder; nothing is loaded until `warm_up` (or the first `run` that must encode).

        :param model: Hub id or local path; the default MiniLM id falls back to the bundled copy offline.
        :param prompt_name: Name of a prompt in the model's `prompts` config (the seed's `psg_prompt_name`).
        :param task: Task route for `Router` models (the seed's `psg_task`), e.g. "document".
        :param gpu_ids: GPU indices; the model loads on the first, two or more start a multi-process pool.
        :param encode_chunk_size: Texts per `encode` call, integer >= 1.
        :param embedding_path: Where to keep the corpus embeddings (`.npy`); None keeps nothing on disk.
        :param overwrite: Re-encode and replace `embedding_path` even when it matches.
        :param batch_size: Texts per forward pass, integer >= 1.
        Other parameters: as in Haystack's `SentenceTransformersDocumentEmbedder`.
        :raises ValueError: An option outside its allowed range (the message names it).
        """
        device = validate_options(
            batch_size=batch_size, gpu_ids=gpu_ids, device=device, prompt_name=prompt_name, task=task
        )
        if isinstance(encode_chunk_size, bool) or not isinstance(encode_chunk_size, int) or encode_chunk_size < 1:
            raise ValueError(f"encode_chunk_size must be an integer >= 1, got {encode_chunk_size!r}")
        if embedding_path is not None and not str(embedding_path).endswith(".npy"):
            raise ValueError(f"embedding_path must end with '.npy', got {embedding_path!r}")
        if embedding_path is not None and precision != "float32":
            raise ValueError(f"embedding_path stores float32 only; precision must be 'float32', got {precision!r}")
        # Explicit super(): @component rebuilds the class, so bare super() would name the pre-decorator class.
        super(SentenceTransformersDocumentEmbedder, self).__init__(  # noqa: UP008 (see above)
            model=model,
            device=device,
            token=token,
            prefix=prefix,
            suffix=suffix,
            batch_size=batch_size,
            progress_bar=progress_bar,
            normalize_embeddings=normalize_embeddings,
            meta_fields_to_embed=meta_fields_to_embed,
            embedding_separator=embedding_separator,
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
        self.prompt_name = prompt_name
        self.task = task
        self.gpu_ids = gpu_ids
        self.encode_chunk_size = encode_chunk_size
        self.embedding_path = embedding_path
        self.overwrite = overwrite
        self._stream: EmbeddingFileStream | None = None  # the embedding file of a streamed corpus (see `run`)
        # Called with the number of documents of each batch once it is encoded (e.g. by `needle index`, which
        # shows its own progress): run-time wiring, neither an init parameter nor serialized.
        self.progress_callback: Callable[[int], object] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component: Haystack's parameters plus ours (the token stays an env-var reference)."""
        data = super(SentenceTransformersDocumentEmbedder, self).to_dict()  # noqa: UP008 (@component rebuilds the class)
        data["init_parameters"].update(
            prompt_name=self.prompt_name,
            task=self.task,
            gpu_ids=self.gpu_ids,
            encode_chunk_size=self.encode_chunk_size,
            embedding_path=self.embedding_path,
            overwrite=self.overwrite,
        )
        return data

    def warm_up(self) -> None:
        """Load the model, unless a reusable embedding file exists (then `run` loads it only if it must encode)."""
        if not self._may_reuse_file():
            self._load_backend()

    def _may_reuse_file(self) -> bool:
        """True when `run` will try to read `embedding_path` instead of encoding."""
        return reusable(self.embedding_path, self.overwrite)

    def texts_to_embed(self, documents: list[Document]) -> list[str]:
        """The exact string encoded per document: prefix, embedded meta fields, content, suffix."""
        return embedded_texts(documents, self.prefix, self.embedding_separator, self.meta_fields_to_embed, self.suffix)

    def fingerprint(self, documents: list[Document], texts: list[str]) -> dict[str, Any]:
        """What makes an embedding file valid for this run: every option that changes a vector, ids and texts."""
        return build_fingerprint(self._settings(), [doc.id for doc in documents], texts)

    def _settings(self) -> dict[str, Any]:
        """Every option that changes a vector, as the embedding file's fingerprint records it."""
        return {
            "model": self.model,
            "revision": self.revision,
            "prompt_name": self.prompt_name,
            "task": self.task,
            "prefix": self.prefix,
            "suffix": self.suffix,
            "meta_fields_to_embed": list(self.meta_fields_to_embed),
            "embedding_separator": self.embedding_separator,
            "normalize_embeddings": self.normalize_embeddings,
            "truncate_dim": self.truncate_dim,
        }

    def _encode_corpus(self, texts: list[str]) -> Embeddings:
        """Encode `texts` in chunks of `encode_chunk_size` into one (N, dim) matrix, counting every batch encoded
        on the progress bar (when `progress_bar` is set) and to `progress_callback` (when one is set)."""
        size = self.encode_chunk_size
        with tqdm(total=len(texts), unit="texts", desc="Embedding", disable=not self.progress_bar) as bar:

            def encoded(rows: int) -> None:
                bar.update(rows)
                if self.progress_callback is not None:
                    self.progress_callback(rows)

            first = self._encode(texts[:size], show_progress_bar=False, on_batch=encoded)
            if len(texts) <= size:
                return first
            matrix: Embeddings = np.empty((len(texts), first.shape[1]), dtype=first.dtype)  # sized by the first
            matrix[: len(first)] = first
            for start in range(size, len(texts), size):
                chunk = self._encode(texts[start : start + size], show_progress_bar=False, on_batch=encoded)
                matrix[start : start + len(chunk)] = chunk
        return matrix

    def _embeddings_for(self, documents: list[Document]) -> Embeddings:
        """Read the matrix from `embedding_path` when it matches, else encode (and save when a path is set)."""
        texts = self.texts_to_embed(documents)
        return load_or_encode(
            self.embedding_path,
            self.overwrite,
            lambda: self.fingerprint(documents, texts),
            lambda: self._encode_corpus(texts),
        )

    @component.output_types(documents=list[Document])
    def run(
        self, documents: list[Document], offset: int | None = None, total: int | None = None
    ) -> dict[str, list[Document]]:
        """Return new Documents carrying their embeddings, in input order; the inputs are not modified.

        `offset` and `total` stream a corpus through the embedder one chunk per run: `documents` are rows
        `offset`... of a corpus of `total` documents, given in order from offset 0. `embedding_path` is then read
        (reused) or written chunk by chunk and finished on the last chunk, ending up exactly as one run over the
        whole corpus leaves it (see `embedding_file_stream`).

        :raises TypeError: `documents` is not a list of Documents (the message names the first bad position).
        :raises ValueError: `offset`/`total` given alone, out of range, or not the next chunk.
        :raises EmbeddingFileError: `embedding_path` exists but was built for another model, options or corpus.
        """
        if not isinstance(documents, list):
            raise TypeError(f"documents must be a list of Documents, got {type(documents).__name__}")
        for position, doc in enumerate(documents):
            if not isinstance(doc, Document):
                raise TypeError(f"documents[{position}] must be a Document, got {type(doc).__name__}")
        if offset is not None or total is not None:
            return {"documents": self._embedded(documents, self._chunk_rows(documents, offset, total))}
        if not documents:
            return {"documents": []}
        return {"documents": self._embedded(documents, self._embeddings_for(documents))}

    @staticmethod
    def _embedded(documents: list[Document], matrix: Embeddings) -> list[Document]:
        """New Documents with row i of MATRIX as document i's embedding."""
        rows = matrix.tolist()
        return [replace(doc, embedding=row) for doc, row in zip(documents, rows, strict=True)]

    def _chunk_rows(self, documents: list[Document], offset: int | None, total: int | None) -> Embeddings:
        """The rows of one chunk of a streamed corpus (read from or written to `embedding_path`, if set)."""
        offset, total = check_chunk(offset, total, len(documents), None if self._stream is None else self._stream.count)
        texts = self.texts_to_embed(documents)
        if total == 0:
            return np.empty((0, 0), dtype=np.float32)
        if self.embedding_path is None:
            return self._encode_corpus(texts) if texts else np.empty((0, 0), dtype=np.float32)
        if offset == 0:
            self._close_stream()
            self._stream = EmbeddingFileStream(self.embedding_path, self.overwrite, self._settings(), total)
        stream = self._stream
        assert stream is not None  # check_chunk: a chunk after the first has an open stream
        try:
            matrix = stream.rows([doc.id for doc in documents], texts, lambda: self._encode_corpus(texts))
            if stream.count == stream.total:
                self._stream = None
                stream.finish()
        except BaseException:
            self._close_stream(stream)
            raise
        return matrix

    def _close_stream(self, stream: "EmbeddingFileStream | None" = None) -> None:
        """Give up the open stream (or STREAM), removing its temporary file."""
        for each in {id(s): s for s in (stream, self._stream) if s is not None}.values():
            each.close()
        self._stream = None
