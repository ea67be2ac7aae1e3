"""Sparse corpus embedder: Documents to new Documents carrying a SPLADE-style ``sparse_embedding``."""

from dataclasses import replace
from typing import Any

from haystack import Document, component

from components.embedders.sentence_transformers_sparse_common import SparseEncodingBase


@component
class SentenceTransformersSparseDocumentEmbedder(SparseEncodingBase):
    """Embeds Documents with a sparse encoder's passage side (``encode_document``), for a ``SparseDocumentStore``.

    Same parameters and output as sentence-transformers-haystack's class of that name (``meta_fields_to_embed``,
    ``embedding_separator``), plus ``max_active_dims``; the input Documents are left as they were.

    ```python
    embedder = SentenceTransformersSparseDocumentEmbedder(model="prithivida/Splade_PP_en_v1")
    documents = embedder.run(documents=[Document(content="Scurvy is caused by a lack of vitamin C")])["documents"]
    ```
    """

    def __init__(
        self, *, meta_fields_to_embed: list[str] | None = None, embedding_separator: str = "\n", **kwargs: Any
    ) -> None:
        """
        :param meta_fields_to_embed: Metadata fields whose values are embedded before the content.
        :param embedding_separator: Joins those values and the content.
        Other parameters: see ``SparseEncodingBase``.
        :raises ValueError: An option outside its allowed range (the message names it).
        """
        if meta_fields_to_embed is not None and (
            not isinstance(meta_fields_to_embed, list) or not all(isinstance(f, str) for f in meta_fields_to_embed)
        ):
            raise ValueError(f"meta_fields_to_embed must be a list of strings or None, got {meta_fields_to_embed!r}")
        if not isinstance(embedding_separator, str):
            raise ValueError(f"embedding_separator must be a string, got {embedding_separator!r}")
        SparseEncodingBase.__init__(self, **kwargs)  # @component rebuilds the class: no zero-argument super()
        self.meta_fields_to_embed = meta_fields_to_embed or []
        self.embedding_separator = embedding_separator

    def _extra_parameters(self) -> dict[str, Any]:
        """``meta_fields_to_embed`` and ``embedding_separator``."""
        return {"meta_fields_to_embed": self.meta_fields_to_embed, "embedding_separator": self.embedding_separator}

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Embed DOCUMENTS; returns new Documents with ``sparse_embedding`` set, in the same order.

        :raises TypeError: ``documents`` is not a list of Documents (a string list belongs to the text embedders).
        """
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise TypeError(
                "SentenceTransformersSparseDocumentEmbedder expects a list of Documents; embed strings with "
                "SentenceTransformersSparseTextEmbedder or SentenceTransformersSparseBatchTextEmbedder"
            )
        texts = [self._text(d) for d in documents]
        vectors = self._encode(texts, queries=False, show_progress_bar=self.progress_bar)
        return {"documents": [replace(d, sparse_embedding=v) for d, v in zip(documents, vectors, strict=True)]}

    def _text(self, document: Document) -> str:
        """The text embedded for DOCUMENT: the chosen metadata values, then its content."""
        meta = [str(document.meta[k]) for k in self.meta_fields_to_embed if document.meta.get(k) is not None]
        return self.embedding_separator.join([*meta, document.content or ""])
