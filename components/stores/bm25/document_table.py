"""Where a loaded BM25 store reads its documents: its own compact file, or a sibling document store.

The BM25 index only needs term ids; documents are read when a search returns them (``top_k`` per query) or
when a metadata filter must look at all of them. A standalone store saves its documents as one JSONL line
each (``Document.to_dict``) plus an array of byte offsets, so one document costs one ``pread`` and no index
structure has to be loaded. A store built over the same corpus as a FAISS store can instead keep only the
ids and read documents from that store's saved generation (``document_store_path``; see
``components.stores.faiss.shared_documents``), so the corpus is stored, and held in memory, once.

A line is read with ``pread``, not through a memory mapping: a file truncated under a mapping kills the process
that reads past its new end (SIGBUS), where a short read is a damaged line, refused in one line naming the file.
The system call adds 2 to 5 µs to the 8 to 25 µs of reading and decoding a line, paid only by hits not yet kept
decoded (``benchmarks/bench_bm25_array_loading.py`` measures both ways).
"""

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.persistence import check_offsets, load_array, verified
from components.stores.document_checks import document_dict, encode_document
from components.stores.hits import document_from_dict
from components.stores.recent_documents import RecentDocuments

DOCUMENTS = "documents.jsonl"
OFFSETS = "documents.offsets.npy"


class DocumentTable(Protocol):
    """Documents of the saved main segment, by id."""

    def get(self, ids: list[str]) -> list[Document]:
        """The documents with these ids, in this order; raises DocumentStoreError when one is missing."""


def write_documents_file(directory: Path, lines: Iterable[bytes]) -> None:
    """Write ``documents.jsonl`` from its lines (``document_line`` of each document) and their byte offsets."""
    offsets = [0]
    with open(directory / DOCUMENTS, "wb") as f:
        for line in lines:
            f.write(line)
            offsets.append(offsets[-1] + len(line))
    np.save(directory / OFFSETS, np.array(offsets, dtype=np.int64))


def document_line(document: Document, position: int) -> bytes:
    """The line ``documents.jsonl`` holds for ``document`` (``Document.to_dict``, UTF-8, newline-terminated),
    checked as a write checks each document (``encode_document``): one JSON encoding serves both.

    :raises ValueError: Naming ``documents[position] (id ...)`` and the field that is not valid Unicode or cannot
        be written as JSON.
    """
    try:
        return json.dumps(document_dict(document), ensure_ascii=False).encode("utf-8") + b"\n"
    except (TypeError, ValueError, RecursionError):
        encode_document(document, position)  # raises, naming the field at fault, unless only the embedding is
        raise ValueError(
            f"documents[{position}] (id {document.id!r}): field 'embedding' cannot be stored as JSON (a list of floats)"
        ) from None


class JsonlDocumentTable:
    """Documents saved beside the index: ``documents.jsonl`` read line by line through its offsets; the last ones
    read stay decoded (``components.stores.recent_documents``: a repeated hit costs a dict lookup, not a read)."""

    def __init__(self, directory: Path, manifest: Mapping[str, Any], ids: list[str]) -> None:
        """Open the file of a generation whose rows hold ``ids``, both files verified against its ``manifest``
        (their sha256, hashed now); checks that the offsets match the rows and the file."""
        self.path = verified(directory, manifest, DOCUMENTS)
        self._offsets = load_array(verified(directory, manifest, OFFSETS), "int64")
        if len(self._offsets) != len(ids) + 1:
            raise DocumentStoreError(
                f"{directory / OFFSETS}: corrupted, {len(self._offsets)} offsets for {len(ids)} documents"
            )
        check_offsets(self._offsets, directory / OFFSETS, end=self.path.stat().st_size)
        self._row = {doc_id: row for row, doc_id in enumerate(ids)}
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        self._recent = RecentDocuments()

    def __del__(self) -> None:
        """Close the file's descriptor (kept so a replaced generation stays readable until then)."""
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

    def get(self, ids: list[str]) -> list[Document]:
        """These documents (shared: callers copy before changing one), each read from its own line unless it is
        still kept decoded; a line must hold the expected id."""
        recent = self._recent
        kept = recent.get_many(ids)
        if all(kept):  # no None: every one is still decoded (the usual case for repeated queries)
            return cast(list[Document], kept)
        missing = [doc_id for doc_id, doc in zip(ids, kept, strict=True) if doc is None]
        read = {doc_id: self._read(self._row_of(doc_id), doc_id) for doc_id in missing}
        if read:
            recent.remember(read)
        return [doc if doc is not None else read[doc_id] for doc_id, doc in zip(ids, kept, strict=True)]

    def _row_of(self, doc_id: str) -> int:
        """Row of a saved document; a missing one means the index and the documents file disagree."""
        row = self._row.get(doc_id)
        if row is None:
            raise DocumentStoreError(f"{self.path}: holds no document with id {doc_id!r}")
        return row

    def _read(self, row: int, doc_id: str) -> Document:
        """Parse line ``row + 1`` of the file and check that it is the document the index expects."""
        span = (int(self._offsets[row]), int(self._offsets[row + 1]))
        return read_line(self._fd, span, row, doc_id, str(self.path))


def read_line(fd: int, span: tuple[int, int], row: int, doc_id: str, where: str) -> Document:
    """``decode_line`` of the bytes ``span`` of file ``fd`` (line ``row + 1`` of ``where``)."""
    start, end = span
    return decode_line(os.pread(fd, end - start, start), row, doc_id, where)


def decode_line(line: bytes, row: int, doc_id: str, where: str) -> Document:
    """The Document of a saved JSON line (line ``row + 1`` of ``where``), which must hold ``doc_id``; a damaged line
    or another id is a DocumentStoreError naming ``where`` and the line."""
    try:
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError(f"a JSON object expected, got {type(data).__name__}")
        document = document_from_dict(data)
    except (ValueError, TypeError, KeyError) as exc:
        raise DocumentStoreError(f"{where}: line {row + 1} is corrupted ({exc})") from exc
    if document.id != doc_id:
        raise DocumentStoreError(f"{where}: line {row + 1} holds id {document.id!r}, expected {doc_id!r}")
    return document
