"""How FAISSDocumentStore writes documents whose vectors come as one float matrix (a memory-mapped ``.npy``, a chunk
of an embedding file), and trains its index on a sample of such a matrix before the bulk of it is added.

``write_embeddings`` and ``from_npy`` take Documents; ``write_fields`` takes text documents as their fields, for a
build that reads its passages from files and never needs Document objects (``plain_documents``). All three store
what ``write_documents`` stores for the same documents and vectors, through ``row_writes``.
"""

import operator
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.stores.document_checks import check_document_list, encode_document
from components.stores.faiss.checks import check_finite, check_matrix
from components.stores.faiss.plain_documents import check_fields, encode_fields, refuse_unstorable
from components.stores.faiss.row_writes import TRAINING_SAMPLE, RowWrites, blobs_of, stored_rows
from components.stores.faiss.sqlite_document_table import IN_INDEX, SQLiteDocumentTable
from components.stores.faiss.vector_index import keeps_exact_vectors


class MatrixWrites(RowWrites):
    """Mixin of FAISSDocumentStore: documents written with the rows of a float (N, dim) matrix as their vectors."""

    def write_embeddings(
        self, documents: list[Document], embeddings: np.ndarray, policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Write documents whose embeddings are the rows of a float (N, dim) array (e.g. a memory-mapped .npy)."""
        return self._write_matrix(documents, embeddings, policy, source="embeddings")

    def write_fields(
        self,
        ids: Sequence[str],
        contents: Sequence[str | None],
        metas: Sequence[dict[str, Any]],
        embeddings: np.ndarray,
    ) -> int:
        """
        Write new text documents given by their fields, ``Document(id=ids[i], content=contents[i], meta=metas[i])``
        with row i of ``embeddings`` (a float (N, dim) array) as its embedding, all or none, stored exactly as
        ``write_embeddings`` stores those Documents, without building them (``plain_documents``): for a build that
        reads its passages from files, a second or more a million. Give a chunk of documents per call: one SQLite
        transaction writes them all.

        :raises DuplicateDocumentError: an id is stored already or given twice (nothing is written).
        :raises ValueError: a field of the wrong type, a value that cannot be stored, a bad ``embeddings`` array or
            row (NaN or infinity), each naming the document or row.
        """
        return self._write_fields(ids, contents, metas, embeddings)

    def train(self, embeddings: np.ndarray) -> None:
        """
        Train the index (IVF lists, PQ or SQ codebooks) on ``embeddings``, a float (N, dim) sample of the vectors
        about to be written chunk by chunk; without it, an index that needs training trains on the first write
        that holds enough vectors. A no-op for an index already trained or that needs none (Flat, HNSW).

        :raises ValueError: naming the first row of ``embeddings`` that holds NaN or infinity.
        """

        def change() -> tuple[None, bool]:
            if self.embedding_dim is not None and embeddings.shape[1:] != (self.embedding_dim,):
                size = embeddings.shape[1:]
                raise ValueError(f"train(): embeddings of shape {size}, this store holds size {self.embedding_dim}")
            self._pretrain(embeddings, "training sample")
            return None, False

        self._mutate(change)

    def needs_training(self, dim: int) -> bool:
        """Whether this store's index, for vectors of DIM values, must be trained before any is added (IVF lists, PQ or
        SQ codebooks) and is not yet: a bulk writer then reads a sample of its vectors for ``train`` first. Flat and
        HNSW indexes never need one, so their builds read no sample.

        :raises ValueError: DIM is not this store's embedding_dim.
        """
        with self._lock:
            self._ready()
            if self.embedding_dim is not None and dim != self.embedding_dim:
                raise ValueError(f"needs_training(): vectors of size {dim}, this store holds size {self.embedding_dim}")
            return not self._vector_index(dim).is_trained

    def reserve(self, count: int, dim: int) -> None:
        """
        Make room in the index for COUNT more vectors of DIM values, before a bulk write of that many chunk by
        chunk: the index's array of vectors is then allocated once, where each write would grow it (copying what it
        holds; ``capacity``): at 1M x 384 a Flat build's adds take a third of the time. A hint: nothing is stored,
        and a store without an index yet (call ``needs_training`` or ``train`` first), an index that keeps no such
        array (IVF) or room the system cannot give are left as they are. The room is taken at once, and kept while
        the store is.

        :raises ValueError: COUNT is not an integer >= 0, or DIM is not this store's embedding_dim.
        """
        try:
            number = operator.index(count)  # an int, or a numpy integer
        except TypeError:
            number = -1
        if isinstance(count, bool) or number < 0:
            raise ValueError(f"reserve(): count must be an integer >= 0, got {count!r}")
        with self._lock:
            self._ready()
            if self.embedding_dim is not None and dim != self.embedding_dim:
                raise ValueError(f"reserve(): vectors of size {dim}, this store holds size {self.embedding_dim}")
            if self._vectors is not None:
                self._vectors.reserve(number)

    def from_npy(self, documents: list[Document], npy_path: str, policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write documents with row i of the float32 (N, dim) ``.npy`` file as document i's embedding."""
        try:
            matrix = np.load(npy_path, mmap_mode="r")
        except (ValueError, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise ValueError(f"{npy_path}: not a readable .npy array ({exc})") from exc
        return self._write_matrix(documents, matrix, policy, source=str(npy_path))

    def _pretrain(self, matrix: np.ndarray, source: str) -> None:
        """Train an untrained index on an even sample of ``matrix`` before a bulk write."""
        vectors = self._vector_index(matrix.shape[1])
        if not vectors.is_trained and len(matrix):
            picks = np.unique(np.linspace(0, len(matrix) - 1, min(len(matrix), TRAINING_SAMPLE)).astype(np.int64))
            sample = np.asarray(matrix[picks], dtype=np.float32)
            check_finite(sample, lambda row: f"{source} row {picks[row]}")
            vectors.train(sample)

    def _write_matrix(self, documents: list[Document], matrix: np.ndarray, policy: DuplicatePolicy, source: str) -> int:
        """Write documents with embeddings from ``matrix``, ``index_chunk_size`` rows at a time, then save once."""
        texts = [encode_document(d, i) for i, d in enumerate(check_document_list(documents))]
        with self._lock:
            self._ready()
            check_matrix(matrix, len(documents), self.embedding_dim, source)
            for start in range(0, len(documents), self.index_chunk_size):
                block = np.asarray(matrix[start : start + self.index_chunk_size], dtype=np.float32)

                def name_of(row: int, start: int = start) -> str:
                    return f"{source} row {start + row}"

                check_finite(block, name_of)

        def change() -> tuple[int, bool]:
            if policy in (DuplicatePolicy.NONE, DuplicatePolicy.FAIL):
                self._check_new_ids(documents)
            self._pretrain(matrix, source)
            written = 0
            for start in range(0, len(documents), self.index_chunk_size):
                block = np.asarray(matrix[start : start + self.index_chunk_size], dtype=np.float32)
                end = start + len(block)
                written += self._write(documents[start:end], texts[start:end], block, np.arange(len(block)), policy)
            return written, written > 0

        return self._mutate(change)

    def _write_fields(
        self, ids: Sequence[str], contents: Sequence[str | None], metas: Sequence[dict[str, Any]], matrix: np.ndarray
    ) -> int:
        """``write_fields``: the documents checked and encoded first, then inserted in one SQLite transaction (an
        id stored or given twice fails it: nothing written), then their vectors added."""
        with self._lock:
            self._ready()
            check_matrix(matrix, len(ids), self.embedding_dim, "embeddings")
        check_fields(ids, contents, metas, len(ids))
        block = np.asarray(matrix, dtype=np.float32)
        check_finite(block, lambda row: f"embeddings row {row}")
        texts = encode_fields(ids, contents, metas)

        def change() -> tuple[int, bool]:
            self._pretrain(block, "embeddings")
            table = self._ready()
            rows = np.arange(self._next_row, self._next_row + len(block), dtype=np.int64)
            if keeps_exact_vectors(self.index_factory, self.metric):  # as ``_write`` stores them
                blobs: list[bytes | None] = [IN_INDEX] * len(block)
            else:
                blobs = blobs_of(block, np.arange(len(block)))
            try:
                table.insert(list(zip(rows.tolist(), ids, texts, blobs, strict=True)))
            except sqlite3.IntegrityError:  # the id column is UNIQUE: the insert is rolled back whole
                position = _first_repeat(table, ids)
                raise DuplicateDocumentError(f"ID '{ids[position]}' (documents[{position}]) already exists.") from None
            except UnicodeEncodeError:  # a lone surrogate, which SQLite cannot store as UTF-8
                refuse_unstorable(ids, contents, metas)
                raise
            self._next_row += len(rows)
            if len(rows):
                self._add_vectors(rows, block)
            return len(rows), len(rows) > 0

        return self._mutate(change)


def _first_repeat(table: SQLiteDocumentTable, ids: Sequence[str]) -> int:
    """The position of the first of IDS that is stored already or given before it in IDS (one is)."""
    stored = stored_rows(table, list(ids))
    seen: set[str] = set()
    for position, document_id in enumerate(ids):
        if document_id in seen or document_id in stored:
            return position
        seen.add(document_id)
    raise ValueError("no id is repeated")
