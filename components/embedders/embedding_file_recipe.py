"""What the sentence-transformers document embedder would encode, and the settings its fingerprint records, read
from its pipeline entry without importing it.

An embedding file's fingerprint (``embedding_file``) holds the embedder's settings and the digests of the ids and
exact texts it encodes. Computing it needs no model, but the component itself cannot be imported without
sentence-transformers and torch: about 5 s and 0.5 GB of resident memory, for a build that brings its vectors in
(``needle index --embeddings``) and never encodes anything. ``TextRecipe.of`` reads the same settings from the
component's init parameters (its pipeline YAML entry) with the component's own defaults, and ``texts_to_embed``
joins the same strings as its ``texts_to_embed``; tests/needle_retrieval/index/test_build_recipe.py checks both
against the component, for every option they read.

Other embedders (OpenAI-compatible, Infinity, an unknown type) have no recipe: ``of`` answers None and the caller
builds the component as before.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from haystack import Document

from components.embedders.embedding_file import build_fingerprint, embedded_texts

ST_DOCUMENT_EMBEDDER = (
    "components.embedders.sentence_transformers_document_embedder.SentenceTransformersDocumentEmbedder"
)
ST_ENCODE_CHUNK_SIZE = 4096  # the component's default `encode_chunk_size`
ST_DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"  # the component's default `model`
_DEFAULTS: dict[str, Any] = {  # the component's defaults for every init parameter its fingerprint records
    "model": ST_DEFAULT_MODEL,
    "revision": None,
    "prompt_name": None,
    "task": None,
    "prefix": "",
    "suffix": "",
    "meta_fields_to_embed": None,
    "embedding_separator": "\n",
    "normalize_embeddings": False,
    "truncate_dim": None,
}


@dataclass(frozen=True)
class TextRecipe:
    """The fingerprint settings and the text rule of one sentence-transformers document embedder entry."""

    settings: dict[str, Any]  # as the component's fingerprint records them (``fingerprint([], [])`` less counts)
    prefix: str
    suffix: str
    meta_fields: tuple[str, ...]
    separator: str
    encode_chunk_size: int  # texts per encode call: a streamed build's chunks are multiples of it

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> "TextRecipe | None":
        """The recipe of a pipeline ENTRY (``{"type": ..., "init_parameters": {...}}``); None when it is not the
        sentence-transformers document embedder or a setting it reads has a type the component would refuse or
        change (the caller then builds the component, which says what is wrong)."""
        if entry.get("type") != ST_DOCUMENT_EMBEDDER:
            return None
        given = entry.get("init_parameters") or {}
        values = {key: given.get(key, default) for key, default in _DEFAULTS.items()}
        fields = values["meta_fields_to_embed"] or []
        strings = (values["prefix"], values["suffix"], values["embedding_separator"], values["model"])
        if not all(isinstance(value, str) for value in strings) or not isinstance(fields, list | tuple):
            return None
        chunk = given.get("encode_chunk_size", ST_ENCODE_CHUNK_SIZE)
        if not all(isinstance(field, str) for field in fields) or type(chunk) is not int or chunk < 1:
            return None
        settings = {**values, "meta_fields_to_embed": list(fields)}
        return cls(settings, values["prefix"], values["suffix"], tuple(fields), values["embedding_separator"], chunk)

    def texts_to_embed(self, documents: Sequence[Document]) -> list[str]:
        """The exact string the embedder encodes per document: prefix, embedded meta fields, content, suffix."""
        return embedded_texts(documents, self.prefix, self.separator, self.meta_fields, self.suffix)

    def fingerprint(self, documents: Sequence[Document], texts: Sequence[str]) -> dict[str, Any]:
        """The component's ``fingerprint``: the settings, the count and the digests of the ids and TEXTS."""
        return build_fingerprint(self.settings, [doc.id for doc in documents], texts)
