"""Search hits as Documents: new ones derived from a store's own without re-validating them, and the shared form.

A store keeps its documents validated once, when written; a search returns new Documents derived from them, so
a caller changing a hit never changes the store. ``Document.__init__`` and ``dataclasses.replace`` re-validate
every field (8.5-30 µs a document on this project's machine), which at top_k 100 costs more than the search:
``hit_documents`` copies the fields instead, in one loop with no call per hit (0.5-1 µs a hit).

A batch of 300 queries at top_k 100 builds 30,000 of them, two objects each that Python's cyclic garbage
collector tracks. Left alone, the collector scans them again and again while they are built (every 700 new
objects it walks all the young ones, and the hits, still alive, move up a generation each time), and the
survivors it promotes to the oldest generation bring on full collections, which walk the whole heap (a loaded
model is hundreds of thousands of objects: 0.1-0.3 s each). ``collector_paused`` runs the build with the collector
off and hands what the block made to the oldest generation at once, so no collection walks the new hits.
"""

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from haystack import Document

SharedHits = tuple[list[Document], list[float]]
"""One query's hits as a store found them: its own Documents (read-only, never changed) and their scores, best
first. A fusion stage builds new Documents only for the hits it keeps (``Candidates.shared``)."""


blank_document: Callable[[], Document] = partial(object.__new__, Document)
"""A new Document with no fields yet, for a caller that fills ``__dict__`` from a stored, validated Document in a
loop of its own (``derived`` is this plus the copy, one call per document)."""


def text_document(
    doc_id: str,
    content: str | None,
    meta: dict[str, Any],
    score: float | None = None,
    embedding: list[float] | None = None,
) -> Document:
    """
    ``Document(id=doc_id, content=content, meta=meta, score=score, embedding=embedding)`` from fields already
    checked (``doc_id`` a non-empty string, ``content`` a string or None), which is when ``__init__`` would set
    exactly these and nothing else. It skips ``__init__``'s per-field tracking: about 1 µs a document where
    ``Document(...)`` costs 10-20, which at a million passages is seconds of a build.
    """
    document = blank_document()
    fields = document.__dict__
    fields["id"], fields["content"], fields["blob"], fields["meta"] = doc_id, content, None, meta
    fields["score"], fields["embedding"], fields["sparse_embedding"] = score, embedding, None
    return document


_PLAIN_FIELDS = frozenset(("id", "content", "blob", "meta", "score", "embedding", "sparse_embedding"))


def document_from_dict(data: dict[str, Any]) -> Document:
    """
    ``Document.from_dict(data)``, built directly when ``data`` is what ``write_documents_file`` writes for a
    text document (no blob, no sparse embedding, no legacy or flattened fields): a tenth of the cost, which
    is most of a search's when its hits are read from disk. Anything else goes through ``from_dict``.
    """
    meta, content, doc_id = data.get("meta") or {}, data.get("content"), data.get("id")
    plain = data.keys() <= _PLAIN_FIELDS and data.get("blob") is None and data.get("sparse_embedding") is None
    if not plain or not isinstance(meta, dict) or not isinstance(doc_id, str) or not doc_id:
        return Document.from_dict(data)
    if content is not None and not isinstance(content, str):
        return Document.from_dict(data)  # raises the error Document gives
    return text_document(doc_id, content, dict(meta), data.get("score"), data.get("embedding"))


def derived(base: Document, **changes: Any) -> Document:
    """
    Return a new Document equal to ``dataclasses.replace(base, **changes)``.

    It skips ``Document.__init__``, which is safe because ``base`` was validated when it was written and
    ``changes`` only sets score, meta or embedding.
    """
    document = blank_document()
    document.__dict__.update(base.__dict__)
    document.__dict__.update(changes)
    return document


def hit(base: Document, score: float, retrieval_type: str) -> Document:
    """A new Document for a search hit: ``base`` with ``score`` and ``meta["retrieval_type"]`` (own meta dict)."""
    document = blank_document()
    fields = document.__dict__
    fields.update(base.__dict__)
    fields["score"] = score
    fields["meta"] = {**base.meta, "retrieval_type": retrieval_type}
    return document


def hit_documents(bases: list[Document], scores: list[float], retrieval_type: str) -> list[Document]:
    """
    New Documents for one query's hits: ``bases[i]`` (a stored, validated Document) with ``scores[i]`` and its own
    meta dict holding ``meta["retrieval_type"]``; the same Documents as ``hit`` gives, built in one loop with no
    call per hit (a quarter to a third cheaper than ``hit`` per hit; what remains is the object and the two dicts
    every Document needs).
    """
    hits: list[Document] = []
    append, new = hits.append, object.__new__
    for base, score in zip(bases, scores, strict=True):
        document = new(Document)
        fields = document.__dict__
        fields.update(base.__dict__)
        meta = fields["meta"].copy()
        meta["retrieval_type"] = retrieval_type
        fields["meta"], fields["score"] = meta, score
        append(document)
    return hits


@contextmanager
def collector_paused() -> Iterator[None]:
    """
    Run the block with Python's cyclic garbage collector off, for building many objects that form no reference
    cycles (reference counting still frees everything as usual); on leaving, also on an error, the collector is
    as it was.

    Switching it off alone only postpones the work: the collector counts the objects made meanwhile and, switched
    back on, at once walks all of them (the hits, still alive). So when nothing is frozen (``gc.freeze``) the
    block's new objects are handed to the oldest generation in two constant-time steps (``gc.freeze()``, then
    ``gc.unfreeze()``), which also resets the count: no collection walks them until the next full one, which
    their number does not bring closer. A cycle made in the block is collected then rather than sooner. When the
    program froze objects itself the freeze is left alone and the collector merely switched back on.

    Threads sharing the collector: one that enters while another holds it off leaves it alone, and the first to
    leave switches it back on, so a collection may run in the other thread's block; that costs time, never
    correctness.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        gc.enable()
