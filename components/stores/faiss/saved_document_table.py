"""The document table of a FAISS store opened from a saved generation: documents stay in the file until needed.

Loading a generation's ``documents.sqlite`` into memory and decoding every document costs about 2.7 GB over raw
faiss at 1M passages, and cannot fit at MS MARCO's 8.8M. This table opens the file read-only instead (``immutable``:
SQLite reads the verified bytes as they are, see ``SavedDocuments``) and keeps in Python only

- one byte per row the store handed out, saying whether that row holds an embedding, and the document count;
- the documents decoded last (``RecentDocuments``: within a fixed count and content size), by row.

A search turns FAISS rows into Documents from that memory (a dict lookup per hit, as the in-memory table does) and
reads the rows it lacks in one ``IN (...)`` query; ``row_of`` is a lookup in the ``id`` column's unique index;
``filter_rows`` decodes a page at a time the documents SQLite cannot rule out (``filter_sql``: most of them, for a
filter SQLite cannot judge) and applies Haystack's own ``document_matches_filter``, so filters match exactly what they
match in memory.

A saved generation never changes. The first write, delete or meta update copies the file into a private temporary
SQLite database (SQLite's backup API, a page copy; the file lies in SQLite's temporary directory and is unlinked at
once, as ``DiskDocumentTable``'s) and changes that copy; the rows it changes are dropped from the memory. A failed
transaction is undone by the store, which opens its live generation again.

The BM25 store of a hybrid index reads documents of this generation through ``documents_of`` from another thread,
so every query and every change of the memory holds the table's lock.
"""

import itertools
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError
from haystack.utils.filters import document_matches_filter

from components.stores.document_checks import encode_document
from components.stores.faiss.saved_files import check_rows
from components.stores.faiss.sqlite_document_table import BATCH, IN_INDEX, JsonValue, SQLiteDocumentTable, decoded
from components.stores.filter_sql import Clause, candidate_clause
from components.stores.hits import SharedHits, derived
from components.stores.recent_documents import RecentDocuments

PAGE = 2_000  # documents decoded at a time by filter_rows and update_meta


class SavedDocumentTable(SQLiteDocumentTable):
    """A saved generation's documents, read from its SQLite file by query; the last ones decoded kept by row."""

    def __init__(self, connection: sqlite3.Connection, rows: np.ndarray, embedded: np.ndarray, next_row: int) -> None:
        """Use ``connection`` (the generation's file, read-only), whose ``rows`` (ascending) hold the documents and
        ``embedded`` (bool, one per row) says which have an embedding; rows lie in [0, ``next_row``)."""
        super().__init__(connection)
        self._count = len(rows)
        self._mask = np.zeros(next_row, dtype=bool)
        self._mask[rows[embedded]] = True
        self._embedded_total = int(np.count_nonzero(embedded))
        self._recent = RecentDocuments()
        self._lock = threading.RLock()
        self._copied = False  # True once the first change moved the rows into a temporary database

    @classmethod
    def open(cls, path: Path, next_row: int, dim: int | None, in_index: bool = False) -> "SavedDocumentTable":
        """
        Open a table saved by ``save_to`` (a saved generation's file, its sha256 verified) whose rows lie in
        [0, ``next_row``) and whose embeddings hold ``dim`` float32 values, or (IN_INDEX, with ``in_index``: the
        generation's FAISS index keeps exact vectors) are the index's; reads each row's number and the size of its
        embedding (in one pass, not its document) and checks them.

        :raises DocumentStoreError: naming the file when it is damaged, holds rows the store never handed out or
            an embedding of another size.
        """
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
            stored = db.execute("SELECT row, coalesce(length(embedding), -1) FROM documents ORDER BY row")
            pairs = np.fromiter(itertools.chain.from_iterable(stored), dtype=np.int64).reshape(-1, 2)
        except (sqlite3.DatabaseError, ValueError, TypeError) as exc:
            raise DocumentStoreError(f"{path}: corrupted document table ({exc})") from exc
        rows, sizes = pairs[:, 0], pairs[:, 1]
        check_rows(rows, path, next_row, "rows")
        embedded = sizes >= 0
        allowed = (sizes == 4 * dim) | ((sizes == len(IN_INDEX)) & in_index) if dim is not None else embedded
        if (bad := np.flatnonzero(embedded & ~allowed)).size:
            raise DocumentStoreError(
                f"{path}: corrupted, row {rows[bad[0]]} holds an embedding of another size than {dim}"
            )
        return cls(db, rows, embedded, next_row)

    def __len__(self) -> int:
        return self._count

    def row_of(self, document_id: str) -> int | None:
        """The row holding ``document_id``, or None."""
        found = self._fetch("SELECT row FROM documents WHERE id = ?", [document_id])
        return int(found[0][0]) if found else None

    def rows_of(self, document_ids: Sequence[str]) -> dict[str, int]:
        """The rows holding those of ``document_ids`` that are stored, by id: one query per ``BATCH`` of ids."""
        found: dict[str, int] = {}
        for chunk in _chunks(list(dict.fromkeys(document_ids))):
            found.update(self._fetch(f"SELECT id, row FROM documents WHERE id IN ({_marks(chunk)})", chunk))
        return found

    def document_of(self, document_id: str) -> Document | None:
        """The stored Document (shared, not a copy: callers copy it) with ``document_id``, or None."""
        return self.documents_of([document_id])[0]

    def documents_of(self, document_ids: list[str]) -> list[Document | None]:
        """``document_of`` for each id, in order: kept ones found by id, the others by one query per ``BATCH``.

        Under the table's lock from the first lookup to the last: the BM25 store of a hybrid index calls it from its
        own threads, and a change between finding the rows and reading them must not fail or mix versions."""
        with self._lock:
            docs = self._recent.get_by_id(document_ids)
            if all(docs):  # no None: every one still decoded (the usual case for repeated queries)
                return docs
            row_of = self.rows_of([doc_id for doc_id, doc in zip(document_ids, docs, strict=True) if doc is None])
            bases = self._bases(list(row_of.values()))
            return [
                doc if doc is not None else (bases[row_of[doc_id]] if doc_id in row_of else None)
                for doc_id, doc in zip(document_ids, docs, strict=True)
            ]

    def has_embedding(self, row: int) -> bool:
        """Whether the document in ``row`` was stored with an embedding."""
        return 0 <= row < len(self._mask) and bool(self._mask[row])

    def with_embedding(self, rows: Sequence[int]) -> np.ndarray:
        """Those of ``rows`` that hold an embedding, in order, as int64 (-1, for no hit, holds none)."""
        picked = np.asarray(rows, dtype=np.int64)
        picked = picked[(picked >= 0) & (picked < len(self._mask))]
        return picked[self._mask[picked]]

    @property
    def embedded_count(self) -> int:
        """Number of documents stored with an embedding."""
        return self._embedded_total

    def embedded_rows(self) -> np.ndarray:
        """Rows of all documents stored with an embedding, ascending, as int64."""
        return np.flatnonzero(self._mask).astype(np.int64)

    def insert(self, entries: Sequence[tuple[int, str, str, bytes | None]]) -> None:
        """Add ``(row, id, encoded document, embedding blob)`` entries; ids must be new."""
        with self._lock:
            self._change("INSERT INTO documents VALUES (?, ?, ?, ?)", entries)
            grow = max((row for row, *_ in entries), default=-1) + 1 - len(self._mask)
            if grow > 0:  # new rows past the end: grow by half at least, so that writes stay linear
                self._mask = np.concatenate([self._mask, np.zeros(max(grow, len(self._mask) // 2), dtype=bool)])
            embedded = [row for row, _, _, blob in entries if blob is not None]
            self._mask[embedded] = True
            self._count += len(entries)
            self._embedded_total += len(embedded)

    def delete(self, rows: Iterable[int]) -> None:
        """Remove the given rows (all stored)."""
        rows = list(rows)
        with self._lock:
            self._change("DELETE FROM documents WHERE row = ?", [(row,) for row in rows])
            self._recent.forget(rows)
            self._embedded_total -= int(np.count_nonzero(self._mask[rows]))
            self._mask[rows] = False
            self._count -= len(rows)

    def clear(self) -> None:
        """Remove every row."""
        with self._lock:
            self._change("DELETE FROM documents", [()])
            self._recent.clear()
            self._mask[:] = False
            self._count = self._embedded_total = 0

    def update_meta(self, rows: Iterable[int], meta: dict[str, Any]) -> None:
        """Merge ``meta`` into the meta of the documents in ``rows``, ``PAGE`` documents at a time (as the in-memory
        table, which commits each row, a failure leaves the rows before it changed: the store restores them)."""
        rows = list(rows)
        with self._lock:
            for start in range(0, len(rows), PAGE):
                page = rows[start : start + PAGE]
                bases = self.decoded_rows(page)
                merged = {row: derived(bases[row], meta={**bases[row].meta, **meta}) for row in page}
                texts = [(encode_document(document, row), row) for row, document in merged.items()]
                self._change("UPDATE documents SET document = ? WHERE row = ?", texts)
                self._recent.forget(page)

    def filter_rows(self, filters: dict[str, Any] | None) -> list[int]:
        """Rows of the documents matching Haystack ``filters`` (all rows when empty), in insertion order."""
        if not filters:
            return [row for (row,) in self._fetch("SELECT row FROM documents ORDER BY row", [])]
        candidates = self._all(candidate_clause(filters))  # those SQLite cannot rule out (``filter_sql``)
        return [row for row, document in candidates if document_matches_filter(filters, document)]

    def shared_hits(self, rows: Sequence[int], scores: Sequence[float]) -> SharedHits:
        """Search results as the stored Documents (shared: never change them) and their scores; row -1 skipped."""
        docs = self._recent.get_many(rows)
        if all(docs):  # every row a hit, every hit still decoded: the usual case, at C speed
            return docs, list(scores)  # type: ignore[return-value]  # all() proved there is no None
        return super().shared_hits(rows, scores)

    def embedding_lists(self, rows: Iterable[int]) -> dict[int, list[float]]:
        """The stored embeddings of those ``rows`` that have one, as lists of floats."""
        blobs = self._blobs(self.with_embedding(list(rows)))
        return {row: vector.tolist() for row, vector in self._vectors_of(blobs).items()}

    def _blobs(self, rows: Sequence[int] | np.ndarray) -> dict[int, bytes]:
        with self._lock:
            return super()._blobs(rows)

    def json_values(self, path: str, after: int = -1) -> list[JsonValue]:
        """``SQLiteDocumentTable.json_values``, read under the lock (the BM25 store of a hybrid index reads too)."""
        with self._lock:
            return super().json_values(path, after)

    def save_to(self, path: Path) -> None:
        """Copy the whole table into a new SQLite file at ``path``."""
        with self._lock:
            super().save_to(path)

    def _bases(self, rows: Sequence[int]) -> dict[int, Document]:
        """The stored Documents (shared: callers copy) of ``rows`` (row -1 skipped), by row: those still decoded,
        the others read and kept."""
        wanted = [row for row in dict.fromkeys(rows) if row >= 0]
        with self._lock:  # read and remembered as one step: a change in between would leave an old version kept
            kept = zip(wanted, self._recent.get_many(wanted), strict=True)
            found = {row: doc for row, doc in kept if doc is not None}
            read = self.decoded_rows([row for row in wanted if row not in found])
            self._recent.remember(read)
        return found | read

    def decoded_rows(self, rows: list[int]) -> dict[int, Document]:
        """The Documents of the stored ``rows``, decoded from the file (one query per ``BATCH``, under the lock), by
        row, and kept nowhere (``_bases`` keeps what it reads)."""
        with self._lock:
            return super().decoded_rows(rows)

    def rows_after(self, after: int, limit: int) -> list[int]:
        """Up to LIMIT stored rows above AFTER, ascending: one page of a walk, read under the lock."""
        query = "SELECT row FROM documents WHERE row > ? ORDER BY row LIMIT ?"
        return [row for (row,) in self._fetch(query, [after, limit])]

    def _all(self, clause: Clause | None) -> Iterator[tuple[int, Document]]:
        """Every row (meeting CLAUSE, a ``filter_sql`` condition) and its decoded Document, in row order, read ``PAGE``
        rows at a time (none of them kept)."""
        text, parameters = clause or ("1", [])
        query = f"SELECT row, document FROM documents WHERE row > ? AND {text} ORDER BY row LIMIT ?"
        try:
            page = self._fetch(query, [-1, *parameters, PAGE])
        except DocumentStoreError:
            if clause is None:
                raise
            yield from self._all(None)  # a condition SQLite would not take: every document (a damaged file fails again)
            return
        while page:
            yield from ((row, decoded(text)) for row, text in page)
            page = self._fetch(query, [page[-1][0], *parameters, PAGE])

    def _fetch(self, query: str, parameters: Sequence[Any]) -> list[Any]:
        """All result rows of one read query, run under the lock."""
        with self._lock:
            try:
                return self._db.execute(query, parameters).fetchall()
            except sqlite3.DatabaseError as exc:
                raise DocumentStoreError(f"corrupted document table ({exc})") from exc

    def _change(self, statement: str, parameters: Sequence[Sequence[Any]]) -> None:
        """Run ``statement`` once per parameter tuple, as one transaction, on the writable copy (made first; not for
        a change of nothing, which a write of only known ids under ``DuplicatePolicy.SKIP`` is)."""
        if not parameters:
            return
        try:
            if not self._copied:
                copy = sqlite3.connect("", check_same_thread=False)
                try:
                    self._db.backup(copy)
                except sqlite3.Error:
                    copy.close()  # its temporary file goes now, not when the exception is collected
                    raise
                self._db.close()
                self._db, self._copied = copy, True
            with self._db:
                self._db.executemany(statement, parameters)
        except sqlite3.OperationalError as exc:  # e.g. "database or disk is full"
            raise OSError(
                f"cannot write the temporary copy of the FAISS store's document table ({exc}); it lies in SQLite's "
                "temporary directory: point SQLITE_TMPDIR at a disk with room"
            ) from exc


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``BATCH`` (SQLite's limit on parameters per statement)."""
    return (items[start : start + BATCH] for start in range(0, len(items), BATCH))


def _marks(chunk: list[Any]) -> str:
    """The ``?, ?, ...`` placeholders for ``chunk``."""
    return ",".join("?" * len(chunk))
