"""The document table of a FAISS store being built: SQLite on disk, no document held in Python.

A store with a ``path`` and ``autosave`` off that starts a new directory (``needle index`` writes every part
of an index that way, chunk by chunk, and saves once) would otherwise hold the whole corpus in memory until
its save: an in-memory SQLite copy of every document with its embedding, and every decoded Document. This
table keeps the same rows in a private temporary SQLite database instead (``sqlite3.connect("")``: a file in
SQLite's temporary directory, ``SQLITE_TMPDIR`` or ``TMPDIR`` else ``/var/tmp`` or ``/tmp``, unlinked as soon as
it is opened, so a killed build leaves nothing behind), of which only SQLite's page cache (2 MiB) stays in
memory. Every lookup is a SQL query, slower than the cached table's dict lookups, which only matters for a
store that is searched before it is saved and reloaded; the saved generation is the same ``documents.sqlite``.

A store whose directory is itself scratch (``FAISSDocumentStore.write_in_place``: ``needle index`` builds each store
inside a generation that is published whole or removed) keeps this table in a named file there instead, which its
save hard-links into the new generation (``link_to``) rather than copying it page by page: gigabytes at 1M
passages. That file is written without a rollback journal on disk and without fsync (``journal_mode=MEMORY``,
``synchronous=OFF``: a crash leaves nothing that is published), and fsynced with the generation before it is.
"""

import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from haystack.utils.filters import document_matches_filter

from components.stores.document_checks import encode_document
from components.stores.faiss.sqlite_document_table import BATCH, SQLiteDocumentTable, decoded
from components.stores.filter_sql import Clause, candidate_clause
from components.stores.hits import derived

ROWS_PER_INSERT = 100  # rows per INSERT statement of a bulk insert (400 values, far under SQLite's 32,766)
_INSERT_MANY = "INSERT INTO documents VALUES " + ", ".join(["(?, ?, ?, ?)"] * ROWS_PER_INSERT)
"""One statement of ROWS_PER_INSERT rows: SQLite runs it in one step, for which Python releases the GIL once, where
a statement per row releases and takes it back per row (each time waiting for another thread that holds it: a
build parses its next chunk meanwhile)."""


class DiskDocumentTable(SQLiteDocumentTable):
    """SQLiteDocumentTable's rows in a temporary on-disk SQLite database, read back by query, never cached."""

    def __init__(self, file: Path | None = None) -> None:
        """Open a new, empty temporary database (deleted by SQLite when the connection closes), or FILE, a new file
        that the store saves by linking it (``link_to``) and removes (``close``)."""
        self.file = file
        connection = sqlite3.connect(file if file is not None else "", check_same_thread=False)
        if file is not None:  # scratch until the generation that links it is fsynced and published
            connection.execute("PRAGMA journal_mode=MEMORY")
            connection.execute("PRAGMA synchronous=OFF")
        super().__init__(connection)
        self._count = 0
        self._embedded_total = 0

    def link_to(self, path: Path) -> bool:
        """Give PATH (a generation being written) this table's file as it is, without copying a page: a hard link
        to ``file``, every change already committed. False for a temporary database (no name to link: copy it
        with ``save_to``) or where the file system links no files (then copied too)."""
        if self.file is None:
            return False
        try:
            os.link(self.file, path)
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Close the database and remove its file's name (a generation that linked it keeps the bytes)."""
        self._db.close()
        if self.file is not None:
            self.file.unlink(missing_ok=True)

    def __len__(self) -> int:
        return self._count

    def row_of(self, document_id: str) -> int | None:
        """The row holding ``document_id``, or None."""
        found = self._db.execute("SELECT row FROM documents WHERE id = ?", (document_id,)).fetchone()
        return None if found is None else int(found[0])

    def rows_of(self, document_ids: Sequence[str]) -> dict[str, int]:
        """The rows holding those of DOCUMENT_IDS that are stored, by id, looked up a batch of ids per query."""
        found: dict[str, int] = {}
        for start in range(0, len(document_ids), BATCH):
            chunk = list(document_ids[start : start + BATCH])
            query = f"SELECT id, row FROM documents WHERE id IN ({','.join('?' * len(chunk))})"
            found.update(self._db.execute(query, chunk))
        return found

    def document_of(self, document_id: str) -> Document | None:
        """A Document decoded from the row with ``document_id`` (without embedding), or None."""
        found = self._db.execute("SELECT document FROM documents WHERE id = ?", (document_id,)).fetchone()
        return None if found is None else decoded(found[0])

    def documents_of(self, document_ids: list[str]) -> list[Document | None]:
        """``document_of`` for each id, in order."""
        return [self.document_of(doc_id) for doc_id in document_ids]

    def has_embedding(self, row: int) -> bool:
        """Whether the document in ``row`` was stored with an embedding."""
        query = "SELECT 1 FROM documents WHERE row = ? AND embedding IS NOT NULL"
        return self._db.execute(query, (row,)).fetchone() is not None

    @property
    def embedded_count(self) -> int:
        """Number of documents stored with an embedding."""
        return self._embedded_total

    def embedded_rows(self) -> np.ndarray:
        """Rows of all documents stored with an embedding, ascending, as int64."""
        rows = self._db.execute("SELECT row FROM documents WHERE embedding IS NOT NULL ORDER BY row")
        return np.fromiter((row for (row,) in rows), dtype=np.int64)

    def insert(self, entries: Sequence[tuple[int, str, str, bytes | None]]) -> None:
        """Add ``(row, id, encoded document, embedding blob)`` entries; ids must be new."""
        try:
            with self._db:  # one transaction: all or none
                whole = len(entries) - len(entries) % ROWS_PER_INSERT
                if whole:
                    values = [value for entry in entries[:whole] for value in entry]
                    step = 4 * ROWS_PER_INSERT
                    self._db.executemany(_INSERT_MANY, [values[i : i + step] for i in range(0, whole * 4, step)])
                self._db.executemany("INSERT INTO documents VALUES (?, ?, ?, ?)", entries[whole:])
        except sqlite3.OperationalError as exc:  # e.g. "database or disk is full"
            # An OSError, as for any other file a build cannot write (`needle index` reports it as such).
            if self.file is not None:
                raise OSError(f"{self.file}: cannot write the FAISS store's document table ({exc})") from exc
            raise OSError(
                f"cannot write the temporary document table of the FAISS store being built ({exc}); it lies in "
                "SQLite's temporary directory: point SQLITE_TMPDIR at a disk with room"
            ) from exc
        self._count += len(entries)
        self._embedded_total += sum(blob is not None for *_, blob in entries)

    def delete(self, rows: Iterable[int]) -> None:
        """Remove the given rows (all stored)."""
        rows = list(rows)
        self._embedded_total -= sum(self.has_embedding(row) for row in rows)
        with self._db:
            self._db.executemany("DELETE FROM documents WHERE row = ?", ((row,) for row in rows))
        self._count -= len(rows)

    def clear(self) -> None:
        """Remove every row."""
        with self._db:
            self._db.execute("DELETE FROM documents")
        self._count = self._embedded_total = 0

    def update_meta(self, rows: Iterable[int], meta: dict[str, Any]) -> None:
        """Merge ``meta`` into the meta of the documents in ``rows``."""
        for row, base in self._bases(list(rows)).items():
            text = encode_document(derived(base, meta={**base.meta, **meta}), row)
            with self._db:
                self._db.execute("UPDATE documents SET document = ? WHERE row = ?", (text, row))

    def filter_rows(self, filters: dict[str, Any] | None) -> list[int]:
        """Rows of the documents matching Haystack ``filters`` (all rows when empty), in insertion order."""
        if not filters:
            return [row for (row,) in self._db.execute("SELECT row FROM documents ORDER BY row")]
        candidates = self._all(candidate_clause(filters))  # those SQLite cannot rule out (``filter_sql``)
        return [row for row, document in candidates if document_matches_filter(filters, document)]

    def embedding_lists(self, rows: Iterable[int]) -> dict[int, list[float]]:
        """The stored embeddings of those ``rows`` that have one, as lists of floats."""
        blobs = self._blobs(list(rows))  # rows without embedding are not selected
        return {row: vector.tolist() for row, vector in self._vectors_of(blobs).items()}

    def _bases(self, rows: Sequence[int]) -> dict[int, Document]:
        """Decoded Documents (without embedding) of the stored ``rows`` (row -1 skipped), by row."""
        return self.decoded_rows(list(dict.fromkeys(int(row) for row in rows if row >= 0)))

    def _all(self, clause: Clause | None) -> Iterator[tuple[int, Document]]:
        """Every row (meeting CLAUSE, a ``filter_sql`` condition) and its decoded Document, in row order, read a page
        at a time."""
        text, parameters = clause or ("1", [])
        try:
            rows = self._db.execute(f"SELECT row, document FROM documents WHERE {text} ORDER BY row", parameters)
        except sqlite3.OperationalError:
            if clause is None:
                raise
            rows = self._db.execute("SELECT row, document FROM documents ORDER BY row")  # a condition SQLite won't take
        for row, document in rows:
            yield row, decoded(document)
