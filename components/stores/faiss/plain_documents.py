"""Text documents given as their fields (id, content, meta) instead of as Documents, checked and encoded exactly as a
store saves the Documents they stand for (``document_checks.encode_document``).

A build that reads a million passages and their vectors from files (``needle index --embeddings``) would otherwise
build a Document per passage, then the dict of its fields (``document_dict``) and a JSON encoder per passage
(``json.dumps`` with options builds one per call) to write it: seconds of a build in which nothing else is done
with the Documents. ``encode_fields`` writes the same JSON text from the fields with one encoder, so the stored rows
(and everything that reads them: documents, filters, verification) are byte for byte those of ``write_documents``;
tests/components/stores/faiss/test_write_fields.py compares the two.

Checks that cost a pass in Python are made here (types, lengths); the rest is left to where it is found for free:
a value JSON cannot hold fails the encoder, a lone surrogate (not valid UTF-8) fails SQLite's insert, and either
is then explained by ``encode_document`` itself (``refuse_unstorable``), naming the document and its field.
"""

import json
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring
from typing import Any

from components.stores.document_checks import encode_document
from components.stores.hits import text_document

_ENCODE_META = json.encoder.c_make_encoder(  # type: ignore[attr-defined]  # CPython's C encoder, not in the stubs
    None, json.JSONEncoder().default, encode_basestring, None, ": ", ", ", False, False, True
)
"""The encoder ``json.dumps(value, ensure_ascii=False)`` builds afresh for each call (its ``iterencode``), built once:
the same separators, keys as given, NaN allowed, unknown types refused; no check for cycles, which a meta read from
JSON cannot have and which fail it with a RecursionError instead of a ValueError (both explained the same way)."""


def check_fields(ids: Sequence[Any], contents: Sequence[Any], metas: Sequence[Any], count: int) -> None:
    """The fields of COUNT text documents: non-empty string ids, string (or None) contents, dict metas.

    :raises ValueError: naming the list that is not COUNT long, or ``documents[i]`` and its field of the wrong type.
    """
    for name, values in (("ids", ids), ("contents", contents), ("metas", metas)):
        if len(values) != count:
            raise ValueError(f"{name}: {len(values)} values, expected one per document ({count})")
    rules: tuple[tuple[str, Sequence[Any], Callable[[Any], bool], str], ...] = (
        ("id", ids, _is_id, "a non-empty string"),
        ("content", contents, _is_content, "a string or None"),
        ("meta", metas, _is_meta, "a dict"),
    )
    for field, values, valid, wanted in rules:
        if not all(map(valid, values)):
            position = next(i for i, value in enumerate(values) if not valid(value))
            found = type(values[position]).__name__
            raise ValueError(f"documents[{position}]: field '{field}' must be {wanted}, got {found}")


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _is_content(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_meta(value: Any) -> bool:
    return isinstance(value, dict)


def encode_fields(ids: Sequence[str], contents: Sequence[str | None], metas: Sequence[dict[str, Any]]) -> list[str]:
    """The JSON text a store saves for each ``Document(id=, content=, meta=)`` of the fields (``encode_document``'s,
    character for character: the same keys in the same order, the same encoder settings).

    :raises ValueError: a meta value JSON cannot hold, naming the document and its field (``encode_document``'s).
    """
    text, meta = encode_basestring, _ENCODE_META  # the document's keys and nulls are written as json.dumps writes them
    try:
        return [
            f'{{"id": {text(i)}, "content": {"null" if c is None else text(c)}, "blob": null, '
            f'"meta": {"".join(meta(m, 0))}, "score": null, "sparse_embedding": null}}'
            for i, c, m in zip(ids, contents, metas, strict=True)
        ]
    except (TypeError, ValueError, RecursionError):
        refuse_unstorable(ids, contents, metas)
        raise


def refuse_unstorable(ids: Sequence[str], contents: Sequence[str | None], metas: Sequence[dict[str, Any]]) -> None:
    """Raise ``encode_document``'s ValueError for the first of the documents that a store cannot save (a value JSON
    cannot hold, a string that is not valid Unicode); return if there is none."""
    for position, fields in enumerate(zip(ids, contents, metas, strict=True)):
        encode_document(text_document(*fields), position)
