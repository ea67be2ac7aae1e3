"""Checks of the documents given to a store's write, shared by the FAISS and BM25 stores.

Everything that could make a write fail half-way is checked before the store changes anything: the list and
its items, valid Unicode (a lone surrogate cannot be saved as UTF-8) and JSON-serialisable fields (both stores
save documents as JSON). Each error names the document by position and id, and the field at fault.
"""

import json
from typing import Any

from haystack import Document

from components.checks import check_unicode

_ALLOWED = "str, int, float, bool, None, lists and dicts of those"


def check_document_list(documents: Any) -> list[Document]:
    """Return ``documents`` if it is a list of Documents; else raise ValueError naming the type or position."""
    if not isinstance(documents, list):
        raise ValueError(f"documents must be a list of Documents, got {type(documents).__name__}")
    for position, document in enumerate(documents):
        if not isinstance(document, Document):
            raise ValueError(f"documents[{position}] must be a Document, got {type(document).__name__}")
    return documents


def document_dict(document: Document) -> dict[str, Any]:
    """
    ``document.to_dict(flatten=False)`` without its deep copy when there is no blob or sparse embedding: the
    same keys and values in the same order, so the same JSON, at a fraction of the cost per document (a
    million-passage write checks and saves every one). The values are the document's own: read, never change.
    """
    if document.blob is not None or document.sparse_embedding is not None:
        return document.to_dict(flatten=False)
    return {
        "id": document.id,
        "content": document.content,
        "blob": None,
        "meta": document.meta,
        "score": document.score,
        "embedding": document.embedding,
        "sparse_embedding": None,
    }


def encode_document(document: Document, position: int) -> str:
    """
    The document as the JSON text a store saves (``Document.to_dict``, embedding left out).

    :raises ValueError: Naming ``documents[position] (id ...)`` and the field that is not valid Unicode or
        cannot be written as JSON.
    """
    data = document_dict(document)
    data.pop("embedding", None)
    name = f"documents[{position}] (id {document.id!r})"
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        culprit = next((field for field, value in _fields(data) if not _json_safe(value)), "meta")
        raise ValueError(f"{name}: field '{culprit}' cannot be stored as JSON (allowed: {_ALLOWED}): {exc}") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        for field, value in _fields(data):
            check_unicode(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), f"{name} {field}")
        check_unicode(text, name)  # a meta key
    return text


def check_meta_storable(meta: Any) -> None:
    """Check a ``meta`` update (``update_by_filter``) before it touches any document."""
    if not isinstance(meta, dict):
        raise ValueError(f"meta must be a dict, got {type(meta).__name__}")
    try:
        text = json.dumps(meta, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"meta cannot be stored as JSON (allowed: {_ALLOWED}): {exc}") from None
    check_unicode(text, "meta")


def _fields(data: dict[str, Any]) -> list[tuple[str, Any]]:
    """The document's fields that can hold user data, by the name an error gives them."""
    meta = data.get("meta") or {}
    return [
        ("content", data.get("content")),
        *((f"meta.{key}", value) for key, value in meta.items()),
        ("blob", data.get("blob")),
        ("sparse_embedding", data.get("sparse_embedding")),
    ]


def _json_safe(value: Any) -> bool:
    """Whether ``value`` can be written as JSON."""
    try:
        json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return True
