"""Documents keyed by int64 row numbers (the FAISS ids): SQLite for durability, a dict for the hot path.

SQLite holds the serialised documents and their embeddings (float32 blobs) and is what a saved generation
contains (copied with SQLite's backup API, which is one fast page copy). Where the store's FAISS index holds
each vector exactly as written (Flat, not cosine: ``vector_index.keeps_exact_vectors``), a row's blob is empty
(``IN_INDEX``) and its embedding is read from the index (``vectors_in_index``): at 1M x 384 that is 1.5 GB less
to write, save and hash. Tables saved before hold a blob for every embedding, and are read as they are.

Search must turn FAISS ids into Documents in about a microsecond each, which a SQL round trip per call cannot do,
so this table, which an in-memory store and a store being written use, also keeps every Document, without its
embedding, in a dict by row. Embeddings are read from SQLite (or the index) only when asked for
(``return_embedding``, ``filter_documents``, training and exact re-ranking). A store opened from a saved
generation keeps its documents in the file instead (``saved_document_table``), and a store built into a new
directory in a temporary file (``disk_document_table``): both are this class with other storage, and answer every
call the same.
"""

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError
from haystack.utils.filters import document_matches_filter

from components.stores.document_checks import encode_document
from components.stores.hits import SharedHits, derived, document_from_dict

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS documents ("
    " row INTEGER PRIMARY KEY,"  # the FAISS id of the document's vector
    " id TEXT NOT NULL UNIQUE,"
    " document TEXT NOT NULL,"  # JSON of Document.to_dict(flatten=False), embedding left out
    " embedding BLOB)"  # little-endian float32; NULL for documents stored without embedding
)
_FLOAT32 = np.dtype("<f4")
BATCH = 900  # rows per "IN (...)" statement, under SQLite's host-parameter limit
IN_INDEX = b""  # the embedding blob of a row whose exact vector is the FAISS index's (an exact Flat index)
VectorSource = Callable[[np.ndarray], np.ndarray]
"""The exact float32 vectors of rows (int64) that the FAISS index holds, as a (len(rows), dim) matrix."""
JsonValue = tuple[int, str | None, str | None]
"""A row, and SQLite's ``json_type`` and JSON text of one value in its stored document (``json_values``)."""
# `document -> path` is the value's JSON text (SQLite 3.38+), `json_type` its kind ('text' for a string).
_VALUES = "SELECT row, json_type(document, ?1), document -> ?1 FROM documents WHERE embedding IS NOT NULL AND row > ?2"
_CHECKED_VALUES = (
    "SELECT row, CASE WHEN json_valid(document) THEN json_type(document, ?1) ELSE '?' END,"
    " CASE WHEN json_valid(document) THEN document -> ?1 END FROM documents WHERE embedding IS NOT NULL AND row > ?2"
)


def decoded(text: str) -> Document:
    """The Document a stored JSON row holds (built as ``Document.from_dict`` builds it, without re-validating a
    plain text document's fields: ``document_from_dict``).

    :raises DocumentStoreError: the row is not one a save writes (not JSON, nested too deeply, a number past 4,300
        digits, not a document's fields): the database's digest matched, so someone wrote it that way.
    """
    try:
        return document_from_dict(json.loads(text))
    except (ValueError, TypeError, RecursionError, AttributeError) as error:
        raise DocumentStoreError(
            f"corrupted document table: a stored row is not a document ({str(error)[:120]})"
        ) from None


class SQLiteDocumentTable:
    """An in-memory SQLite table of documents plus a row → Document cache that mirrors it."""

    def __init__(self, connection: sqlite3.Connection | None = None) -> None:
        self._db = connection or sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(_SCHEMA)
        self._docs: dict[int, Document] = {}
        self._row_of: dict[str, int] = {}
        self._embedded: set[int] = set()
        # Where the rows stored IN_INDEX get their embeddings: set by the store that holds the index.
        self.vectors_in_index: VectorSource | None = None

    def __len__(self) -> int:
        return len(self._docs)

    def rows_after(self, after: int, limit: int) -> list[int]:
        """Up to LIMIT stored rows above AFTER, ascending (SQLite's primary key): one page of a walk."""
        query = "SELECT row FROM documents WHERE row > ? ORDER BY row LIMIT ?"
        return [row for (row,) in self._db.execute(query, (after, limit)).fetchall()]

    def row_of(self, document_id: str) -> int | None:
        """The row holding ``document_id``, or None."""
        return self._row_of.get(document_id)

    def rows_of(self, document_ids: Sequence[str]) -> dict[str, int]:
        """The rows holding those of ``document_ids`` that are stored, by id (a table on disk asks once per batch)."""
        return {document_id: row for document_id in document_ids if (row := self.row_of(document_id)) is not None}

    def document_of(self, document_id: str) -> Document | None:
        """The stored Document (shared, not a copy: callers copy it) with ``document_id``, or None."""
        row = self._row_of.get(document_id)
        return None if row is None else self._docs.get(row)

    def documents_of(self, document_ids: list[str]) -> list[Document | None]:
        """``document_of`` for each id, in order."""
        docs = cast(dict[int | None, Document], self._docs)  # an unknown id's row is None, which no key is
        return list(map(docs.get, map(self._row_of.get, document_ids)))

    def has_embedding(self, row: int) -> bool:
        """Whether the document in ``row`` was stored with an embedding."""
        return row in self._embedded

    def with_embedding(self, rows: Sequence[int]) -> np.ndarray:
        """Those of ``rows`` (stored rows) that hold an embedding, in order, as int64 (a filtered search's
        candidates)."""
        return np.array([row for row in rows if self.has_embedding(row)], dtype=np.int64)

    @property
    def embedded_count(self) -> int:
        """Number of documents stored with an embedding."""
        return len(self._embedded)

    def embedded_rows(self) -> np.ndarray:
        """Rows of all documents stored with an embedding, ascending, as int64."""
        return np.array(sorted(self._embedded), dtype=np.int64)

    def insert(self, entries: Sequence[tuple[int, str, str, bytes | None]]) -> None:
        """Add ``(row, id, encoded document, embedding blob)`` entries; ids must be new."""
        with self._db:  # one transaction; committed, so that a backup never waits on it
            self._db.executemany("INSERT INTO documents VALUES (?, ?, ?, ?)", entries)
        for row, document_id, text, blob in entries:
            self._cache(row, document_id, text, blob is not None)

    def _cache(self, row: int, document_id: str, text: str, embedded: bool) -> None:
        # Decoding what was stored (not copying the caller's object) keeps the cache equal to a reloaded store
        # and immune to later mutation of the caller's documents.
        self._docs[row] = decoded(text)
        self._row_of[document_id] = row
        if embedded:
            self._embedded.add(row)

    def delete(self, rows: Iterable[int]) -> None:
        """Remove the given rows."""
        rows = list(rows)
        with self._db:
            self._db.executemany("DELETE FROM documents WHERE row = ?", ((row,) for row in rows))
        for row in rows:
            del self._row_of[self._docs.pop(row).id]
            self._embedded.discard(row)

    def clear(self) -> None:
        """Remove every row."""
        with self._db:
            self._db.execute("DELETE FROM documents")
        self._docs.clear()
        self._row_of.clear()
        self._embedded.clear()

    def update_meta(self, rows: Iterable[int], meta: dict[str, Any]) -> None:
        """Merge ``meta`` into the meta of the documents in ``rows``."""
        for row in rows:
            base = self._docs[row]
            text = encode_document(derived(base, meta={**base.meta, **meta}), row)
            with self._db:
                self._db.execute("UPDATE documents SET document = ? WHERE row = ?", (text, row))
            self._cache(row, base.id, text, row in self._embedded)

    def json_values(self, path: str, after: int = -1) -> list[JsonValue]:
        """The value at PATH (a SQLite JSON path: ``$."meta"."tenant"``) in the stored document of every row above
        AFTER holding an embedding, as (row, type, JSON text), in one SQL pass with no document decoded: what a
        tenant filter groups rows by (``tenant_rows``; AFTER: the rows it holds already). The type is SQLite's
        ``json_type`` (``'text'`` for a string), None where the document has no such key, ``'?'`` for a document
        SQLite's JSON cannot read (one holding NaN).

        :raises DocumentStoreError: the table cannot be read (naming SQLite's reason).
        """
        try:
            try:
                found: list[JsonValue] = self._db.execute(_VALUES, (path, after)).fetchall()
            except sqlite3.OperationalError:  # a document SQLite's JSON cannot read (NaN): each one checked first
                found = self._db.execute(_CHECKED_VALUES, (path, after)).fetchall()
        except sqlite3.Error as exc:
            raise DocumentStoreError(f"corrupted document table ({exc})") from exc
        return found

    def decoded_rows(self, rows: list[int]) -> dict[int, Document]:
        """The Documents of the stored ROWS decoded from their stored JSON (one query per ``BATCH``), by row, and kept
        nowhere: a pass over many documents (a tenant filter reading values ``json_values`` cannot give as Python
        reads them) costs no memory beyond its own.

        :raises DocumentStoreError: the table cannot be read (naming SQLite's reason), or a row is not a document.
        """
        found: dict[int, Document] = {}
        try:
            for start in range(0, len(rows), BATCH):
                chunk = rows[start : start + BATCH]
                query = f"SELECT row, document FROM documents WHERE row IN ({','.join('?' * len(chunk))})"
                found.update((row, decoded(text)) for row, text in self._db.execute(query, chunk))
        except sqlite3.Error as exc:
            raise DocumentStoreError(f"corrupted document table ({exc})") from exc
        return found

    def filter_rows(self, filters: dict[str, Any] | None) -> list[int]:
        """Rows of the documents matching Haystack ``filters`` (all rows when empty), in insertion order."""
        if not filters:
            return list(self._docs)
        return [row for row, document in self._docs.items() if document_matches_filter(filters, document)]

    def documents(self, rows: Sequence[int], with_embedding: bool) -> list[Document]:
        """New Documents for ``rows`` in that order, with their stored embedding when asked."""
        docs = self._bases(rows)
        embeddings = self.embedding_lists(rows) if with_embedding else {}
        return [derived(docs[row], meta=dict(docs[row].meta), embedding=embeddings.get(row)) for row in rows]

    def shared_hits(self, rows: Sequence[int], scores: Sequence[float]) -> SharedHits:
        """Search results as the stored Documents (shared: never change them) and their scores; row -1 skipped."""
        docs = self._bases(rows)
        if -1 not in rows:  # the usual case: every row a hit, looked up at C speed
            return list(map(docs.__getitem__, rows)), list(scores)
        kept = [(row, score) for row, score in zip(rows, scores, strict=True) if row >= 0]
        return [docs[row] for row, _ in kept], [score for _, score in kept]

    def _bases(self, rows: Sequence[int]) -> dict[int, Document]:
        """The stored Documents (shared: callers copy) by row, holding at least those of ``rows`` that are >= 0."""
        return self._docs

    def embeddings(self, rows: Sequence[int] | np.ndarray, dim: int) -> np.ndarray:
        """The stored embeddings of ``rows`` (all stored with one) as a float32 (len(rows), dim) matrix."""
        found = self._vectors_of(self._blobs(rows))
        return np.array([found[int(row)] for row in rows], dtype=_FLOAT32).reshape(len(rows), dim)

    def embedding_lists(self, rows: Iterable[int]) -> dict[int, list[float]]:
        """The stored embeddings of those ``rows`` that have one, as lists of floats."""
        blobs = self._blobs([row for row in rows if row in self._embedded])
        return {row: vector.tolist() for row, vector in self._vectors_of(blobs).items()}

    def _vectors_of(self, blobs: dict[int, bytes]) -> dict[int, np.ndarray]:
        """The embedding of each row of BLOBS (row -> its stored blob): the blob's float32 values, or for a row
        stored ``IN_INDEX`` the FAISS index's vector (``vectors_in_index``), read for all such rows at once."""
        found = {row: np.frombuffer(blob, dtype=_FLOAT32) for row, blob in blobs.items() if blob != IN_INDEX}
        elsewhere = np.array([row for row, blob in blobs.items() if blob == IN_INDEX], dtype=np.int64)
        if len(elsewhere):
            if self.vectors_in_index is None:
                raise DocumentStoreError("the embeddings of this table are its FAISS index's, and it has none")
            found.update(zip(elsewhere.tolist(), self.vectors_in_index(elsewhere), strict=True))
        return found

    def _blobs(self, rows: Sequence[int] | np.ndarray) -> dict[int, bytes]:
        found: dict[int, bytes] = {}
        for start in range(0, len(rows), BATCH):
            chunk = [int(row) for row in rows[start : start + BATCH]]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT row, embedding FROM documents WHERE embedding IS NOT NULL AND row IN ({marks})"
            found.update(self._db.execute(query, chunk))
        return found

    def save_to(self, path: Path) -> None:
        """Copy the whole table into a new SQLite file at ``path``."""
        target = sqlite3.connect(path)
        try:
            self._db.backup(target)
        except sqlite3.Error as exc:  # e.g. "disk I/O error" on a full disk
            raise DocumentStoreError(f"{path}: cannot write the document table ({exc})") from exc
        finally:
            target.close()
