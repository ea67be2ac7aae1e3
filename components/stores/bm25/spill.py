"""Documents written to a BM25 store that is saved once at the end, kept on disk instead of in memory.

``needle index`` builds its BM25 store chunk by chunk with ``autosave`` off and saves it once; holding every
written Document until then made the build's memory grow with the corpus. A ``DocumentSpill`` appends each
written document, as the JSON line the save writes (``document_table.write_documents_file``), to an unlinked
temporary file (``tempfile.TemporaryFile``: it has no name, so a killed build leaves nothing behind, and it is
freed when the store is) and keeps only the id → line position. Reading one back is a ``pread`` and a decode,
as for a saved store's documents.
"""

import os
import tempfile
from array import array
from pathlib import Path
from typing import IO

from haystack import Document

from components.stores.bm25.document_table import read_line

_NAME = "temporary file of the BM25 store's written documents"

SpillState = tuple[dict[str, int], int]
"""DocumentSpill.checkpoint(): the line of each live id and the number of lines (the file is append-only)."""


class DocumentSpill:
    """Documents by id in an append-only temporary file; only each id's line number is held in memory."""

    def __init__(self, near: Path) -> None:
        """Create the file in ``near``, or in its nearest existing parent (on the disk the store is saved to)."""
        directory = next(p for p in (near, *near.parents) if p.is_dir())
        # Open for the spill's lifetime, closed when it is freed: no context manager can span that.
        self._file: IO[bytes] = tempfile.TemporaryFile(dir=directory, prefix="bm25-documents-")  # noqa: SIM115
        self._line: dict[str, int] = {}
        self._offsets = array("q", [0])  # byte offset of each line; the last one is the end of the file

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._line

    def put(self, lines: dict[str, bytes]) -> None:
        """Append these documents' lines (``document_line``; new, or replacing the line of the same id) in one
        write."""
        self._file.seek(self._offsets[-1])
        self._file.write(b"".join(lines.values()))  # an OSError (a full disk) propagates: `needle index` reports it
        self._file.flush()
        for doc_id, line in lines.items():
            self._line[doc_id] = len(self._offsets) - 1
            self._offsets.append(self._offsets[-1] + len(line))

    def drop(self, ids: list[str]) -> None:
        """Forget these documents (their lines stay in the file, unreferenced)."""
        for doc_id in ids:
            self._line.pop(doc_id, None)

    def clear(self) -> None:
        """Forget every document (the file stays append-only, so a ``checkpoint`` taken before stays valid)."""
        self._line = {}

    def get(self, ids: list[str]) -> list[Document]:
        """These documents (all spilled), read back from their lines."""
        return [self._read(doc_id, self._line[doc_id]) for doc_id in ids]

    def line(self, doc_id: str) -> bytes:
        """The saved line of a spilled document, as written (``document_line``), not decoded."""
        line = self._line[doc_id]
        start = self._offsets[line]
        return os.pread(self._file.fileno(), self._offsets[line + 1] - start, start)

    def checkpoint(self) -> SpillState:
        """What ``restore`` needs to undo a failed transaction."""
        return dict(self._line), len(self._offsets)

    def restore(self, state: SpillState) -> None:
        """Return to a ``checkpoint``: lines appended since are forgotten and later overwritten."""
        self._line = dict(state[0])
        del self._offsets[state[1] :]

    def _read(self, doc_id: str, line: int) -> Document:
        """Decode line ``line``, which must hold ``doc_id``."""
        span = (self._offsets[line], self._offsets[line + 1])
        return read_line(self._file.fileno(), span, line, doc_id, "temporary BM25 document file")
