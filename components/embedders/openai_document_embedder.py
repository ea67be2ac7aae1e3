"""Corpus embedder for OpenAI-compatible servers, with the seed's fingerprinted `.npy` embedding file.

Haystack's `OpenAIDocumentEmbedder` sends batches one after another, keys results by document id (so two
documents with one id share a vector) and by default logs a failed batch and goes on, leaving documents
without embeddings. Here batches run `concurrency` at a time, results are matched by position, and any
failure is an error. With `embedding_path` the matrix is kept in the same `.npy` + fingerprint file as
:class:`SentenceTransformersDocumentEmbedder` writes (`components.embedders.embedding_file`): a later run over
the same documents with the same model and options reads it back instead of calling the server, and a file
built for anything else is refused with a message that says what differs.
"""

from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from haystack import Document, component
from haystack.utils import Secret
from tqdm.auto import tqdm

from components.checks import check_unicode
from components.embedders.embedding_file import (
    build_fingerprint,
    embedded_texts,
    load_embeddings,
    reusable,
    save_embeddings,
)
from components.embedders.openai_common import DEFAULT_API_KEY, DEFAULT_MODEL, Meta, OpenAIEmbedderBase, check_string

Rows = npt.NDArray[np.float32]


@component
class OpenAIDocumentEmbedder(OpenAIEmbedderBase):
    """Embeds Documents through an OpenAI-compatible `/embeddings` endpoint, optionally keeping a `.npy` file.

    ```python
    embedder = OpenAIDocumentEmbedder(base_url="http://127.0.0.1:7997/v1", concurrency=8, embedding_path="emb.npy")
    docs = embedder.run(documents=docs)["documents"]  # a second run reads emb.npy back
    ```
    """

    _init_parameters: ClassVar[tuple[str, ...]] = (
        "model_name",
        "base_url",
        "api_key",
        "dimensions",
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
        model_name: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: Secret | None = DEFAULT_API_KEY,
        dimensions: int | None = None,
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
        """Create the embedder; no connection is made until `run` must call the server.

        :param meta_fields_to_embed: Meta fields whose values go before the content, joined by `embedding_separator`.
        :param batch_size: Documents per request, 1..2048 (OpenAI's limit).
        :param concurrency: Requests in flight at once, 1..64 (the seed's `concurrency`).
        :param embedding_path: Where to keep the corpus embeddings (`.npy`); None keeps nothing on disk.
        :param overwrite: Re-embed and replace `embedding_path` even when it matches.
        :param progress_bar: Show a progress bar counting embedded documents.
        Other parameters: as in :class:`OpenAITextEmbedder`.
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
        fields = [] if meta_fields_to_embed is None else meta_fields_to_embed
        if not isinstance(fields, list) or not all(isinstance(field, str) and field for field in fields):
            raise ValueError(f"meta_fields_to_embed must be a list of non-empty strings or None, got {fields!r}")
        self.meta_fields_to_embed = fields
        self.embedding_separator = check_string("embedding_separator", embedding_separator)
        if embedding_path is not None and (not isinstance(embedding_path, str) or not embedding_path.endswith(".npy")):
            raise ValueError(f"embedding_path must be None or a path ending with '.npy', got {embedding_path!r}")
        self.embedding_path = embedding_path
        for name, flag in (("overwrite", overwrite), ("progress_bar", progress_bar)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be a bool, got {flag!r}")
        self.overwrite = overwrite
        self.progress_bar = progress_bar
        # Called with the number of documents of each batch once it is embedded (e.g. by `needle index`, which
        # shows its own progress): run-time wiring, neither an init parameter nor serialized.
        self.progress_callback: Callable[[int], object] | None = None

    def texts_to_embed(self, documents: list[Document]) -> list[str]:
        """The exact string sent per document: prefix, embedded meta fields, content, suffix (as Haystack's)."""
        texts = embedded_texts(documents, self.prefix, self.embedding_separator, self.meta_fields_to_embed, self.suffix)
        for position, text in enumerate(texts):
            check_unicode(text, f"documents[{position}]")
        return texts

    def fingerprint(self, documents: list[Document], texts: list[str]) -> dict[str, Any]:
        """What makes an embedding file valid here: the backend, every option that changes a vector, ids, texts."""
        settings = {
            "backend": "openai",
            "model": self.model_name,
            "dimensions": self.dimensions,
            "prefix": self.prefix,
            "suffix": self.suffix,
            "meta_fields_to_embed": list(self.meta_fields_to_embed),
            "embedding_separator": self.embedding_separator,
        }
        return build_fingerprint(settings, [doc.id for doc in documents], texts)

    def _stored(self, documents: list[Document], texts: list[str]) -> Rows | None:
        """The rows kept at `embedding_path`, if a file is there and may be reused (checked against this run)."""
        path = self.embedding_path
        if path is None or not reusable(path, self.overwrite):
            return None
        return load_embeddings(path, self.fingerprint(documents, texts))

    def _kept(self, documents: list[Document], texts: list[str], matrix: npt.NDArray[np.float64]) -> Rows:
        """`matrix` as float32 rows, written to `embedding_path` (with its fingerprint) when one is set."""
        rows = matrix.astype(np.float32)
        if self.embedding_path is not None:
            save_embeddings(self.embedding_path, rows, self.fingerprint(documents, texts))
        return rows

    def _check(self, documents: Any) -> list[Document]:
        """`documents` must be a list of Documents; the error names the first bad position."""
        if not isinstance(documents, list):
            raise TypeError(f"documents must be a list of Documents, got {type(documents).__name__}")
        for position, doc in enumerate(documents):
            if not isinstance(doc, Document):
                raise TypeError(f"documents[{position}] must be a Document, got {type(doc).__name__}")
        return documents

    def _result(self, documents: list[Document], rows: Rows, meta: Meta) -> dict[str, Any]:
        """New Documents carrying their rows, in input order (the inputs stay untouched)."""
        vectors = rows.tolist()
        return {"documents": [replace(d, embedding=v) for d, v in zip(documents, vectors, strict=True)], "meta": meta}

    @component.output_types(documents=list[Document], meta=dict[str, Any])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Return new Documents with embeddings, in input order; the inputs are not modified.

        :returns: `{"documents": [...], "meta": {"model", "usage"}}`; meta is `{"model", "embedding_file"}`
            when the vectors were read from `embedding_path`.
        :raises TypeError: `documents` is not a list of Documents (the message names the first bad position).
        :raises ValueError: A document's text is not valid Unicode.
        :raises EmbeddingFileError: `embedding_path` exists but was built for another model, options or corpus.
        :raises OpenAIEmbeddingError: A request failed after retries, or an answer was not one vector per text.
        """
        if not self._check(documents):
            return {"documents": [], "meta": {}}
        texts = self.texts_to_embed(documents)
        stored = self._stored(documents, texts)
        if stored is not None:
            return self._result(documents, stored, self._file_meta())
        with tqdm(total=len(texts), unit="docs", desc="Embedding", disable=not self.progress_bar) as bar:

            def embedded(rows: int) -> None:
                bar.update(rows)
                if self.progress_callback is not None:
                    self.progress_callback(rows)

            matrix, meta = self._embed(texts, on_batch=embedded)
        return self._result(documents, self._kept(documents, texts, matrix), meta)

    @component.output_types(documents=list[Document], meta=dict[str, Any])
    async def run_async(self, documents: list[Document]) -> dict[str, Any]:
        """Async twin of `run` (no progress bar), with the same input, output and errors."""
        if not self._check(documents):
            return {"documents": [], "meta": {}}
        texts = self.texts_to_embed(documents)
        stored = self._stored(documents, texts)
        if stored is not None:
            return self._result(documents, stored, self._file_meta())
        matrix, meta = await self._embed_async(texts)
        return self._result(documents, self._kept(documents, texts, matrix), meta)

    def _file_meta(self) -> Meta:
        """The meta of a run answered from the embedding file: no server call, no usage."""
        return {"model": self.model_name, "embedding_file": self.embedding_path}
