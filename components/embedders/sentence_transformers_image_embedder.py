"""Image embedder: Haystack's `SentenceTransformersDocumentImageEmbedder` plus the seed's corpus `.npy` file.

A CLIP-style sentence-transformers model puts images and texts in one space, so image Documents embedded here
are found by text queries embedded with `SentenceTransformersTextEmbedder` and the same model (the seed's
`is_multimodal`). Added on top of Haystack's component (its parameters keep their meaning):

* each Document's image comes from its `blob` (a `ByteStream` holding the image bytes) when it has one, else
  from the file named by `meta[file_path_meta_field]` (default `image_path`, as
  `JSONLImageCorpusReader` writes it), resolved against `root_path`;
* `embedding_path` / `overwrite` -- the same fingerprinted `.npy` file as the text document embedder
  (`embedding_file`): row i = document i, reused only when the model, normalisation, ids and the SHA-256 of
  every image's bytes are unchanged; while a reusable file exists, `warm_up` loads no model;
* `batch_size` is checked at init, and the model must support images (checked when it loads);
* images are decoded one batch at a time, so memory holds `batch_size` images, not the corpus;
* `progress_callback`, an attribute as on the text document embedder: called with the number of images of each
  batch once it is encoded, for code that shows progress its own way (`needle index --multimodal`).

Haystack's component also renders PDF pages; that path is not offered here (a PDF is not an image file).
"""

import hashlib
import io
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from haystack import Document, component
from haystack.utils import ComponentDevice, Secret
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentImageEmbedder as HaystackSentenceTransformersDocumentImageEmbedder,
)
from PIL import Image

from components.checks import check_int
from components.embedders.embedding_file import (
    build_fingerprint,
    load_or_encode,
    reusable,
)

DEFAULT_CLIP_MODEL = "sentence-transformers/clip-ViT-B-32"
MAX_BATCH_SIZE = 65536


class ImageEmbeddingError(ValueError):
    """A Document whose image cannot be read or decoded; the message names the document, path and corpus line."""


@component
class SentenceTransformersImageEmbedder(HaystackSentenceTransformersDocumentImageEmbedder):
    """Embeds the image of each Document with a CLIP-style sentence-transformers model.

    ```python
    embedder = SentenceTransformersImageEmbedder(model="sentence-transformers/clip-ViT-B-32",
                                                 normalize_embeddings=True, embedding_path="img.npy")
    docs = embedder.run(documents=JSONLImageCorpusReader().run(path="photos.jsonl")["documents"])["documents"]
    ```
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_CLIP_MODEL,
        file_path_meta_field: str = "image_path",
        root_path: str | None = None,
        embedding_path: str | None = None,
        overwrite: bool = False,
        device: ComponentDevice | None = None,
        token: Secret | None = Secret.from_env_var(["HF_API_TOKEN", "HF_TOKEN"], strict=False),
        batch_size: int = 32,
        progress_bar: bool = True,
        normalize_embeddings: bool = False,
        trust_remote_code: bool = False,
        local_files_only: bool = False,
        model_kwargs: dict[str, Any] | None = None,
        tokenizer_kwargs: dict[str, Any] | None = None,
        config_kwargs: dict[str, Any] | None = None,
        encode_kwargs: dict[str, Any] | None = None,
        backend: Literal["torch", "onnx", "openvino"] = "torch",
    ) -> None:
        """Create the embedder; nothing is loaded until `warm_up` (or the first `run` that must encode).

        :param model: Hub id or local directory of a sentence-transformers model that embeds images and text.
        :param file_path_meta_field: Meta field naming the image file of a Document without a `blob`.
        :param root_path: Directory that relative image paths are resolved against (None: the working directory).
        :param embedding_path: Where to keep the corpus embeddings (`.npy`); None keeps nothing on disk.
        :param overwrite: Re-encode and replace `embedding_path` even when it matches.
        :param batch_size: Images per forward pass, an integer in [1, 65536].
        Other parameters: as in Haystack's `SentenceTransformersDocumentImageEmbedder` (precision is float32: the
        `.npy` file stores float32).
        :raises ValueError: An option outside its allowed range (the message names it).
        """
        check_int("batch_size", batch_size, 1, MAX_BATCH_SIZE)
        if not isinstance(file_path_meta_field, str) or not file_path_meta_field:
            raise ValueError(f"file_path_meta_field must be a non-empty string, got {file_path_meta_field!r}")
        if embedding_path is not None and not str(embedding_path).endswith(".npy"):
            raise ValueError(f"embedding_path must end with '.npy', got {embedding_path!r}")
        # Explicit super(): @component rebuilds the class, so bare super() would name the pre-decorator class.
        super(SentenceTransformersImageEmbedder, self).__init__(  # noqa: UP008 (see above)
            file_path_meta_field=file_path_meta_field,
            root_path=root_path,
            model=model,
            device=device,
            token=token,
            batch_size=batch_size,
            progress_bar=progress_bar,
            normalize_embeddings=normalize_embeddings,
            trust_remote_code=trust_remote_code,
            local_files_only=local_files_only,
            model_kwargs=model_kwargs,
            tokenizer_kwargs=tokenizer_kwargs,
            config_kwargs=config_kwargs,
            encode_kwargs=encode_kwargs,
            backend=backend,
        )
        self.embedding_path = embedding_path
        self.overwrite = overwrite
        # Called with the number of images of each batch once it is encoded (e.g. by `needle index`, which shows
        # its own progress): run-time wiring, neither an init parameter nor serialized.
        self.progress_callback: Callable[[int], object] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component: Haystack's parameters plus ours (precision is always float32 here)."""
        data = super(SentenceTransformersImageEmbedder, self).to_dict()  # noqa: UP008 (@component rebuilds the class)
        params = data["init_parameters"]
        params.pop("precision", None)
        params["root_path"] = params.get("root_path") or None
        params.update(embedding_path=self.embedding_path, overwrite=self.overwrite)
        return data

    def warm_up(self) -> None:
        """Load the model (unless a reusable embedding file exists) and check that it embeds images; idempotent."""
        if self._may_reuse_file():
            return
        super(SentenceTransformersImageEmbedder, self).warm_up()  # noqa: UP008 (@component rebuilds the class)
        model = self._loaded_model()
        if not model.supports("image"):
            raise ValueError(
                f"model {self.model!r} cannot embed images (it supports: {', '.join(map(str, model.modalities))}); "
                "give a CLIP-style model such as sentence-transformers/clip-ViT-B-32"
            )

    def _loaded_model(self) -> Any:
        """The SentenceTransformer that Haystack's warm_up loaded (shared with embedders of the same settings)."""
        if self._embedding_backend is None:
            raise RuntimeError("the model is not loaded; call warm_up() first")
        return self._embedding_backend.model

    def _may_reuse_file(self) -> bool:
        """True when `run` will try to read `embedding_path` instead of encoding."""
        return reusable(self.embedding_path, self.overwrite)

    def _where(self, doc: Document) -> str:
        """How an error names a document: its id, image path and corpus line when known."""
        parts = [f"document {doc.id!r}"]
        if doc.meta.get(self.file_path_meta_field) is not None:
            parts.append(f"image {doc.meta[self.file_path_meta_field]!r}")
        if doc.meta.get("corpus_line") is not None:
            parts.append(f"corpus line {doc.meta['corpus_line']}")
        return ", ".join(parts)

    def _image_bytes(self, doc: Document) -> bytes:
        """The encoded image of one Document: its blob, else the file its meta names."""
        if doc.blob is not None:
            return doc.blob.data
        value = doc.meta.get(self.file_path_meta_field)
        if not isinstance(value, str) or not value:
            raise ImageEmbeddingError(
                f"{self._where(doc)} has no image: give it a blob or a meta[{self.file_path_meta_field!r}] path"
            )
        try:
            return (Path(self.root_path) / value).read_bytes()
        except OSError as e:
            raise ImageEmbeddingError(f"{self._where(doc)}: cannot read the image ({e.strerror or e})") from None

    def _decode(self, doc: Document) -> Image.Image:
        """Decode one Document's image as RGB pixels, naming the document when it is not an image."""
        data = self._image_bytes(doc)
        try:
            with Image.open(io.BytesIO(data)) as image:
                return image.convert("RGB")
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
            raise ImageEmbeddingError(f"{self._where(doc)}: not a readable image ({e})") from None

    def fingerprint(self, documents: list[Document]) -> dict[str, Any]:
        """What makes an embedding file valid: model, normalisation, ids and the SHA-256 of each image's bytes."""
        settings = {"model": self.model, "input": "image", "normalize_embeddings": self.normalize_embeddings}
        digests = [hashlib.sha256(self._image_bytes(doc)).hexdigest() for doc in documents]
        return build_fingerprint(settings, [doc.id for doc in documents], digests)

    def _encode_images(self, documents: list[Document]) -> npt.NDArray[np.float32]:
        """Encode every Document's image, `batch_size` decoded images at a time, into one (N, dim) matrix; each
        batch encoded is counted on `progress_callback` (when one is set)."""
        if self._embedding_backend is None:
            self.warm_up()
        model = self._loaded_model()
        chunks = []
        for start in range(0, len(documents), self.batch_size):
            images = [self._decode(doc) for doc in documents[start : start + self.batch_size]]
            chunks.append(
                model.encode(
                    images,
                    batch_size=self.batch_size,
                    show_progress_bar=False,
                    normalize_embeddings=self.normalize_embeddings,
                    convert_to_numpy=True,
                    **(self.encode_kwargs or {}),
                )
            )
            if self.progress_callback is not None:
                self.progress_callback(len(images))
        return np.concatenate(chunks).astype(np.float32, copy=False)

    def _embeddings_for(self, documents: list[Document]) -> npt.NDArray[np.float32]:
        """Read the matrix from `embedding_path` when it matches, else encode (and save when a path is set)."""
        return load_or_encode(
            self.embedding_path,
            self.overwrite,
            lambda: self.fingerprint(documents),
            lambda: self._encode_images(documents),
        )

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Return new Documents carrying the embeddings of their images, in input order (inputs unchanged).

        :raises TypeError: `documents` is not a list of Documents (the message names the first bad position).
        :raises ImageEmbeddingError: A Document without an image, or whose image cannot be read or decoded.
        :raises EmbeddingFileError: `embedding_path` exists but was built for another model, options or images.
        """
        if not isinstance(documents, list):
            raise TypeError(f"documents must be a list of Documents, got {type(documents).__name__}")
        for position, doc in enumerate(documents):
            if not isinstance(doc, Document):
                raise TypeError(f"documents[{position}] must be a Document, got {type(doc).__name__}")
        if not documents:
            return {"documents": []}
        rows = self._embeddings_for(documents).tolist()
        source = {"type": "image", "file_path_meta_field": self.file_path_meta_field}
        return {
            "documents": [
                replace(doc, embedding=row, meta={**doc.meta, "embedding_source": source})
                for doc, row in zip(documents, rows, strict=True)
            ]
        }
