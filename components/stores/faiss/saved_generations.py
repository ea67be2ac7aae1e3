"""How FAISSDocumentStore saves itself as a generation of its directory and loads one back.

A save writes the document table and the FAISS index into a new generation (``crash_safe_generations``: written
whole under a temporary name, fsynced, then made the live one), with a manifest of the store's settings and counts.
A load checks that manifest and every file's sha256 before SQLite or FAISS reads a byte, then the files' own
shapes (``saved_files``): a tampered generation is refused naming the file, never searched.

The manifest's ``format`` says how the table holds embeddings. ``needle-faiss-store/1``: each one as a float32 blob,
as every index that changes or approximates vectors (cosine, HNSW, IVF, PQ, SQ) keeps them. ``needle-faiss-store/2``:
an exact Flat index, whose rows are stored ``IN_INDEX`` and read back from the index (no second copy of 1.5 GB at
1M x 384). A needle that reads only ``/1`` refuses a ``/2`` generation as a format it does not know, where it would
otherwise take its rows' empty blobs for corrupted embeddings; this one reads both (generations written before the
tag changed hold ``IN_INDEX`` rows under ``/1``, and are read as they are).
"""

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from haystack.document_stores.errors import DocumentStoreError

from components.stores.crash_safe_generations import MANIFEST, verified, verify_all
from components.stores.faiss.checks import FORMAT, FORMAT_IN_INDEX, check_manifest
from components.stores.faiss.disk_document_table import DiskDocumentTable
from components.stores.faiss.saved_document_table import SavedDocumentTable
from components.stores.faiss.shared_documents import DOCUMENTS_FILE, share
from components.stores.faiss.sqlite_document_table import SQLiteDocumentTable
from components.stores.faiss.vector_index import FAISSVectorIndex, keeps_exact_vectors
from components.stores.file_digests import hashed_meanwhile
from components.stores.transactions import SingleWriter

SaveProgress = Callable[[str, int, int], None]
"""``save``'s ``on_progress(stage, done, total)``."""


def _quiet(stage: str, done: int, total: int) -> None:
    """A ``SaveProgress`` that reports nothing."""


class SavedGenerations:
    """Mixin of FAISSDocumentStore: its ``save``, and the saving and loading of generations behind it."""

    path: str | None
    metric: str
    index_factory: str
    embedding_dim: int | None
    index_chunk_size: int
    index_use_gpu: bool
    search_params: dict[str, float] | None
    _lock: threading.RLock
    _writer: SingleWriter
    _table: SQLiteDocumentTable | None
    _vectors: FAISSVectorIndex | None
    _info: dict[str, Any]
    _next_row: int
    _in_place: bool

    if TYPE_CHECKING:  # provided by the store (a stub here would shadow the store's own in the MRO)

        def _ready(self) -> SQLiteDocumentTable:
            """The document table, loading the saved store on first use."""

        def _save(self, root: Path, report: Any = None) -> None:
            """Save to ROOT now, under its writer lock (``TransactionalStore``)."""

    def write_in_place(self) -> None:
        """
        Build the document table in a file of this store's directory and save it by linking that file into the new
        generation, not copying it (``disk_document_table``): gigabytes less to write at 1M passages. For a store
        whose directory is itself scratch, published whole or removed with what holds it (``needle index`` builds
        each store inside a generation that is); elsewhere a killed build would leave that file behind. A run-time
        choice, never saved; it applies to a table started after it by a store with a path and ``autosave`` off.
        """
        self._in_place = True

    def save(self, on_progress: SaveProgress | None = None) -> None:
        """
        Write the store as a new generation of ``path`` (crash-safe); a no-op when it was never loaded.

        :param on_progress: Called as ``on_progress(stage, done, total)`` while the save goes: ``writing documents``
            (``total`` documents) then ``writing vectors`` (``total`` vectors), each called with ``done`` 0 as it
            starts and ``total`` once done, then ``digesting`` (``done`` of ``total`` bytes of the files just
            written, hashed for the manifest, see ``file_digests``). ``needle index`` shows it as progress lines.
            A run-time argument: never saved with the store.
        :raises DocumentStoreError: If another writer saved to ``path`` since this store read it, or holds its lock.
        """
        if self.path is None:
            raise ValueError("save(): this FAISSDocumentStore has path=None (in memory only); give it a path")
        with self._lock:
            if self._table is not None:
                self._save(Path(self.path), on_progress)

    def _save_locked(self, root: Path, report: SaveProgress = _quiet) -> None:
        """Write a new generation; the unchanged table then stands for it to readers (the BM25 store). REPORT: see
        ``save``."""
        generation = self._writer.write(root, lambda directory: self._write_generation(directory, report), report)
        table = self._ready()
        if isinstance(table, DiskDocumentTable) and table.file is not None:
            # Its file is the generation's now, which must never change: the next use opens that generation.
            table.close()
            self._table = None
        else:
            share(generation, table)

    def _checkpoint(self) -> int | None:
        """What a reload does not restore: the inferred embedding_dim (the rest is the live generation)."""
        return self.embedding_dim

    def _restore(self, embedding_dim: int | None) -> None:
        """Reload the live generation, which is what this store held before the failed transaction (it held the
        lock and had checked that the generation was its own); if even that fails, reload on next use."""
        self._table, self._vectors, self._info, self._next_row = None, None, {}, 0
        self.embedding_dim = embedding_dim
        try:
            self._ready()
        except Exception:
            self._table = None

    def _load(self, generation: Path, manifest: dict[str, Any]) -> SQLiteDocumentTable:
        """Load a saved generation into this store (its vectors; its documents stay in their file); returns its
        document table."""
        settings = {"metric": self.metric, "index_factory": self.index_factory, "embedding_dim": self.embedding_dim}
        check_manifest(manifest, generation / MANIFEST, settings)
        verify_all(generation, manifest)  # every file's sha256, before SQLite or FAISS reads one
        documents = verified(generation, manifest, DOCUMENTS_FILE)
        exact = keeps_exact_vectors(manifest["index_factory"], manifest["metric"])
        if manifest["format"] == FORMAT_IN_INDEX and not exact:
            raise DocumentStoreError(
                f"{generation / MANIFEST}: corrupted, format {FORMAT_IN_INDEX} is an exact Flat index's, not "
                f"{manifest['index_factory']!r} with metric {manifest['metric']!r}"
            )
        table = SavedDocumentTable.open(documents, manifest["next_row"], manifest["embedding_dim"], exact)  # checked
        vectors = None
        if manifest["vectors"] is not None:
            vectors = FAISSVectorIndex.read(
                generation, manifest, self.metric, self.index_chunk_size, self.index_use_gpu, self.search_params
            )
        if len(table) != manifest["documents"] or (vectors.ntotal if vectors else None) != manifest["vectors"]:
            raise DocumentStoreError(f"{generation / MANIFEST}: counts disagree with the saved index and documents")
        if exact and vectors is not None and not vectors.exact_flat:  # its rows' embeddings are read from it
            raise DocumentStoreError(
                f"{generation / MANIFEST}: corrupted, a Flat index's vectors file holds another index"
            )
        indexed = vectors.rows() if exact and vectors is not None else np.empty(0, np.int64)
        if exact and not np.array_equal(indexed, table.embedded_rows()):  # a row's vector is read from the index
            raise DocumentStoreError(f"{documents}: corrupted, its rows with an embedding are not the FAISS index's")
        self._table, self._vectors = table, vectors
        self._info, self._next_row = manifest["info"], manifest["next_row"]
        self.embedding_dim = manifest["embedding_dim"]
        share(generation, table)
        return table

    def _exact_vectors(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of ROWS as the FAISS index holds them: the embeddings of rows stored ``IN_INDEX``."""
        if self._vectors is None:
            raise DocumentStoreError("this store's document table names vectors of a FAISS index it does not have")
        return self._vectors.reconstruct(rows)

    def _write_generation(self, directory: Path, report: SaveProgress) -> dict[str, Any]:
        """Write the document table and the vectors into DIRECTORY, each a stage told to REPORT; returns the
        manifest fields. The vectors' sha256 is taken as they are written (``saved_files.write_index``), the
        table's on a thread of its own meanwhile (``hashed_meanwhile``): the manifest then records both without
        reading gigabytes back after the writes."""
        table = self._ready()
        report("writing documents", 0, len(table))
        if not (isinstance(table, DiskDocumentTable) and table.link_to(directory / DOCUMENTS_FILE)):
            table.save_to(directory / DOCUMENTS_FILE)
        report("writing documents", len(table), len(table))
        with hashed_meanwhile(directory / DOCUMENTS_FILE):
            if self._vectors is not None:
                report("writing vectors", 0, self._vectors.ntotal)
                self._vectors.write(directory)
                report("writing vectors", self._vectors.ntotal, self._vectors.ntotal)
        exact = keeps_exact_vectors(self.index_factory, self.metric)
        return {
            "format": FORMAT_IN_INDEX if exact else FORMAT,
            "metric": self.metric,
            "index_factory": self.index_factory,
            "embedding_dim": self.embedding_dim,
            "next_row": self._next_row,
            "documents": len(table),
            "vectors": self._vectors.ntotal if self._vectors is not None else None,
            "info": self._info,
        }
