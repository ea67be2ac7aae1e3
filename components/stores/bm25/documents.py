"""The BM25 store's documents by id: those written in memory, saved ones read on demand, filter masks cached."""

import json
from collections.abc import Container
from pathlib import Path
from typing import Any, cast

import numpy as np
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter

from components.stores.bm25.document_table import DocumentTable, document_line
from components.stores.bm25.index import IndexSnapshot
from components.stores.bm25.segments import SearchableMain
from components.stores.bm25.spill import DocumentSpill, SpillState

_MASK_CACHE_SIZE = 32

Masks = tuple[np.ndarray | None, np.ndarray | None]
"""Which main-segment rows and which delta rows a filter accepts (None: the segment is absent)."""

DocumentsState = tuple[dict[str, Document], DocumentTable | None, SpillState | None]
"""StoredDocuments.checkpoint(): the documents held in memory, the saved table and the spill's state."""


class StoredDocuments:
    """
    Documents by id. Written ones stay in memory, or after ``spill_to`` go to a temporary file
    (``components.stores.bm25.spill``); those of a loaded index are read from its table when a search returns
    them, and kept once a filter had to look at all of them. Not thread-safe on its own: the store calls it
    under its lock.
    """

    def __init__(self) -> None:
        """Start empty, with no saved table, holding written documents in memory."""
        self._memory: dict[str, Document] = {}
        self._table: DocumentTable | None = None
        self._masks: dict[tuple[int, str], Masks] = {}
        self._spill_near: Path | None = None
        self._spill: DocumentSpill | None = None  # created on the first write after spill_to

    def spill_to(self, near: Path) -> None:
        """Keep documents written from now on in a temporary file in ``near`` (or its nearest existing parent)."""
        self._spill_near = near

    def use_table(self, table: DocumentTable | None) -> None:
        """Read documents not in memory from ``table`` (that of the live saved generation) from now on."""
        self._table = table

    def put(self, documents: dict[str, Document], lines: dict[str, bytes] | None = None) -> None:
        """
        Hold copies of these documents (new, or replacing the version with the same id): in memory, or after
        ``spill_to`` as their saved lines, ``lines`` when the caller already encoded them (``document_line``).
        """
        self._masks.clear()
        if self._spill_near is None:
            self._memory.update({doc_id: copied(document) for doc_id, document in documents.items()})
            return
        if self._spill is None:
            self._spill = DocumentSpill(self._spill_near)
        if lines is None:
            lines = {doc_id: document_line(document, i) for i, (doc_id, document) in enumerate(documents.items())}
        self._spill.put(lines)
        for doc_id in documents:
            self._memory.pop(doc_id, None)  # a cached saved version

    def drop(self, ids: list[str]) -> None:
        """Forget the in-memory copies of these documents (the index no longer lists them)."""
        for doc_id in ids:
            self._memory.pop(doc_id, None)
        if self._spill is not None:
            self._spill.drop(ids)

    def clear(self) -> None:
        """Forget every document, saved table included."""
        self._memory, self._table = {}, None
        if self._spill is not None:
            self._spill.clear()
        self._masks.clear()

    def checkpoint(self) -> DocumentsState:
        """What ``restore`` needs to undo a failed transaction."""
        return dict(self._memory), self._table, self._spill.checkpoint() if self._spill is not None else None

    def restore(self, state: DocumentsState) -> None:
        """Return to a ``checkpoint``."""
        self._memory, self._table, spilled = state
        if self._spill is not None:
            self._spill.restore(spilled if spilled is not None else ({}, 1))
        self._masks.clear()

    def get(self, ids: list[str], cache: bool = False) -> list[Document]:
        """Documents by id from memory, the spill, else the saved table (whose documents are kept in memory
        afterwards when ``cache``)."""
        memory, spill = self._memory, self._spill
        if spill is None and not cache:  # the usual cases: all written in memory, or all in the saved table
            if not memory and self._table is not None:
                return self._table.get(ids)
            kept = [memory.get(doc_id) for doc_id in ids]
            if all(kept):
                return cast(list[Document], kept)
        missing = [doc_id for doc_id in ids if doc_id not in memory]
        spilled = [doc_id for doc_id in missing if doc_id in spill] if spill is not None and missing else []
        fetched = dict(zip(spilled, spill.get(spilled), strict=True)) if spill is not None and spilled else {}
        missing = [doc_id for doc_id in missing if doc_id not in fetched] if fetched else missing
        saved = dict(zip(missing, self._table.get(missing), strict=True)) if missing and self._table else {}
        if cache:
            memory.update(saved)
        fetched.update(saved)
        return [memory[doc_id] if doc_id in memory else fetched[doc_id] for doc_id in ids]

    def lines(self, ids: list[str]) -> list[bytes]:
        """The ``documents.jsonl`` line of each of these documents: those in the spill copied as written there
        (the same line: a save of a million streamed documents neither decodes nor re-encodes them), others
        encoded from ``get``."""
        spill = self._spill
        lines = {doc_id: spill.line(doc_id) for doc_id in ids if doc_id in spill} if spill is not None else {}
        others = [doc_id for doc_id in ids if doc_id not in lines]
        lines.update(zip(others, map(document_line, self.get(others), range(len(others))), strict=True))
        return [lines[doc_id] for doc_id in ids]

    def filter_masks(self, snapshot: IndexSnapshot[SearchableMain], filters: dict[str, Any]) -> Masks:
        """Which live main rows and delta rows match ``filters``; cached per index version and filter."""
        key = (snapshot.version, json.dumps(filters, sort_keys=True, default=str))
        if key not in self._masks:
            if len(self._masks) >= _MASK_CACHE_SIZE:
                self._masks.pop(next(iter(self._masks)))
            main = self.mask(snapshot.main.ids, filters, snapshot.alive) if snapshot.main else None
            delta = self.mask(snapshot.delta.ids, filters, None) if snapshot.delta else None
            self._masks[key] = (main, delta)
        return self._masks[key]

    def mask(self, ids: list[str], filters: dict[str, Any], alive: np.ndarray | None) -> np.ndarray:
        """Boolean mask over ``ids``: live (per ``alive``) and matching ``filters``."""
        rows = np.flatnonzero(alive) if alive is not None else np.arange(len(ids))
        mask = np.zeros(len(ids), dtype=bool)
        documents = self.get([ids[r] for r in rows], cache=True)
        mask[rows] = [document_matches_filter(filters=filters, document=d) for d in documents]
        return mask


def copied(document: Document) -> Document:
    """A new Document equal to a stored one (own meta dict), so a caller changing it cannot change the store."""
    copy = object.__new__(Document)
    copy.__dict__.update(document.__dict__, meta=dict(document.meta))
    return copy


def apply_policy(index: Container[str], documents: list[Document], policy: DuplicatePolicy) -> dict[str, int]:
    """The documents to write under ``policy``: their positions in ``documents`` by id (a later duplicate in the
    batch wins with OVERWRITE). ``index`` answers whether an id is stored (the BM25 index, the sparse store's state)."""
    accepted: dict[str, int] = {}
    for position, document in enumerate(documents):
        exists = document.id in index or document.id in accepted
        if exists and policy == DuplicatePolicy.FAIL:
            raise DuplicateDocumentError(f"ID '{document.id}' (documents[{position}]) already exists.")
        if exists and policy == DuplicatePolicy.SKIP:
            continue
        accepted[document.id] = position
    return accepted
