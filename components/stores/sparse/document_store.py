"""A Haystack document store searched by learned sparse vectors (SPLADE-style): impact-scored, persisted, verified."""

import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.errors import MissingDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter

from components.checks import check_filters
from components.stores.async_twins import DocumentStoreAsyncTwins
from components.stores.bm25.document_table import JsonlDocumentTable, document_line
from components.stores.bm25.documents import DocumentsState, StoredDocuments, apply_policy, copied
from components.stores.bm25.matrix import SaveProgress, quiet
from components.stores.crash_safe_generations import MANIFEST
from components.stores.document_checks import check_document_list, check_meta_storable
from components.stores.document_pages import DocumentPages
from components.stores.metadata_queries import MetadataQueries
from components.stores.sparse.index import IndexState
from components.stores.sparse.searches import SparseSearches
from components.stores.sparse.segment_files import GENERATIONS, load_generation, write_generation
from components.stores.sparse.vectors import document_vector
from components.stores.transactions import SingleWriter, TransactionalStore


class SparseDocumentStore(SparseSearches, TransactionalStore, DocumentStoreAsyncTwins, MetadataQueries, DocumentPages):
    """
    Documents searchable by learned sparse vectors: the score of a document is the dot product of its
    ``sparse_embedding`` with the query's (``components.stores.sparse.index``).

    Documents must carry a ``sparse_embedding`` (a sparse document embedder's output); their vectors live in the
    index (float32 weights) and are handed back on every document the store returns. Writes and deletes are
    searchable by the next query; each mutating call is all-or-nothing and, with ``path`` and ``autosave``, saved
    as a new generation, crash-safely and with one writer (``components.stores.transactions``), in the BM25 store's
    segment format, verified file by file when opened (``components.stores.sparse.segment_files``). Documents are
    saved beside the index, or read from the FAISS store at ``document_store_path`` (one copy of a corpus indexed
    both ways), as the BM25 store does: read from there, they come without their dense ``embedding``, which stays
    in the FAISS index. Every public method has an ``*_async`` twin.
    """

    def __init__(self, path: str | None = None, document_store_path: str | None = None, autosave: bool = True) -> None:
        """
        :param path: Directory the index is saved to and loaded from; loaded on first use.
        :param document_store_path: Directory of a FAISS store over the same corpus: the saved index then holds
            no documents and reads them from there. Saved relative to ``path``, so both can move together.
        :param autosave: With ``path``, save after every mutating call (as the FAISS and BM25 stores do); turn it
            off and call ``save()`` yourself for many small writes.
        :raises ValueError: A parameter of the wrong kind (the message names it).
        """
        for name, value in (("path", path), ("document_store_path", document_store_path)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name} must be a non-empty directory path or None, got {value!r}")
        if document_store_path is not None and path is None:
            raise ValueError("document_store_path needs path: only a saved index can read its documents elsewhere")
        if not isinstance(autosave, bool):
            raise ValueError(f"autosave must be true or false, got {autosave!r}")
        self.path = path
        self.document_store_path = document_store_path
        self.autosave = autosave
        self._lock = threading.RLock()
        self._writer = SingleWriter(GENERATIONS)
        self._state: IndexState | None = None
        self._documents = StoredDocuments()
        self._shared: str | None = document_store_path
        self._masks: dict[tuple[int, str], np.ndarray] = {}

    def to_dict(self) -> dict[str, Any]:
        """Serialize the store's configuration (not its documents: ``save`` writes those to ``path``)."""
        return default_to_dict(
            self, path=self.path, document_store_path=self.document_store_path, autosave=self.autosave
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SparseDocumentStore":
        """Deserialize a store from ``to_dict`` output; its index is loaded from ``path`` on first use."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the index and build its inverted form now rather than on the first query; idempotent."""
        _ = self._ready().csc

    def count_documents(self) -> int:
        """Number of documents in the store."""
        return len(self._ready())

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents matching Haystack ``filters`` (all when empty), in write order, each with its vector."""
        check_filters(filters)
        with self._lock:
            state = self._ready()
            documents = self._with_vectors(state, self._live_ids(state), cache=True)
        return [d for d in documents if not filters or document_matches_filter(filters=filters, document=d)]

    def _document_pages(self, filters: dict[str, Any] | None, page_size: int) -> Iterator[list[Document]]:
        """Pages of the documents matching ``filters`` (``DocumentPages``): the live ids when the walk began, less
        those deleted since, read a page at a time."""
        ids = self._live_ids(self._ready())
        for start in range(0, len(ids), page_size):
            with self._lock:
                state = self._ready()
                page = self._with_vectors(state, [i for i in ids[start : start + page_size] if i in state])
            yield [d for d in page if not filters or document_matches_filter(filters=filters, document=d)]

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """Number of documents matching ``filters``."""
        return len(self.filter_documents(filters))

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """Documents by id, in the order asked; raises MissingDocumentError naming ids that are not stored."""
        with self._lock:
            state = self._ready()
            missing = [doc_id for doc_id in ids if doc_id not in state]
            if missing:
                raise MissingDocumentError(f"{len(missing)} of the ids are not in this store, e.g. {missing[:5]}")
            return self._with_vectors(state, list(ids))

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        Write documents, all or none; searchable from the next query.

        :param policy: ``NONE`` behaves as ``FAIL``. ``FAIL`` writes nothing if any id exists (or repeats),
            ``SKIP`` leaves existing ones, ``OVERWRITE`` replaces them (a later duplicate in the batch wins).
        :returns: The number of documents written.
        :raises ValueError: A document without a valid ``sparse_embedding``, or one that cannot be saved,
            naming ``documents[i] (id ...)`` and the field.
        :raises DuplicateDocumentError: With ``FAIL``, naming the first id that already exists.
        """
        vectors = [document_vector(d, i) for i, d in enumerate(check_document_list(documents))]
        bare = [replace(d, sparse_embedding=None) for d in documents]  # the vector lives in the index only
        lines = [document_line(d, i) for i, d in enumerate(bare)]
        policy = DuplicatePolicy.FAIL if policy == DuplicatePolicy.NONE else DuplicatePolicy(policy)

        def change() -> tuple[int, bool]:
            state = self._ready()
            accepted = apply_policy(state, documents, policy)
            self._documents.put(
                {i: bare[at] for i, at in accepted.items()}, {i: lines[at] for i, at in accepted.items()}
            )
            self._state = state.written(list(accepted), [vectors[at] for at in accepted.values()])
            return len(accepted), bool(accepted)

        return self._mutate(change)

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete documents by id; unknown ids are ignored. Deleted documents vanish from the next search."""
        ids = list(document_ids)

        def change() -> tuple[None, bool]:
            state = self._ready()
            gone = [i for i in ids if i in state]
            self._state = state.deleted(gone)
            self._documents.drop(gone)
            return None, bool(gone)

        self._mutate(change)

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the documents matching ``filters``, all or none; returns how many."""
        with self._lock:
            ids = [d.id for d in self.filter_documents(filters)]
            self.delete_documents(ids)
        return len(ids)

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Merge ``meta`` into the metadata of the documents matching ``filters``, all or none; returns how many.

        With ``document_store_path`` the saved index holds no documents: update the FAISS store as well."""
        check_filters(filters)
        check_meta_storable(meta)

        def change() -> tuple[int, bool]:
            matching = self.filter_documents(filters)
            updated = {d.id: replace(d, sparse_embedding=None, meta={**d.meta, **meta}) for d in matching}
            self._documents.put(updated)
            self._masks.clear()
            return len(updated), bool(updated)

        return self._mutate(change)

    def delete_all_documents(self) -> None:
        """Empty the store (and, with autosave, its saved index)."""

        def change() -> tuple[None, bool]:
            self._ready()
            self._state = IndexState()
            self._documents.clear()
            return None, True

        self._mutate(change)

    def save(self, path: str | None = None, on_progress: SaveProgress | None = None) -> None:
        """Save the store to ``path`` (default: the store's ``path``) as a new generation, crash-safely.

        :param on_progress: Called as ``on_progress(stage, done, total)``: ``writing the index`` and (unless the
            documents are shared) ``writing documents``, in documents, then ``digesting``, in bytes (the BM25
            store's stages, which ``needle index`` shows as progress lines). A run-time argument, never saved.
        :raises DocumentStoreError: If another writer saved to ``path`` since this store read it, or holds its lock.
        """
        target = path or self.path
        if target is None:
            raise ValueError("save needs a path: pass save(path=...) or create the store with path=...")
        self._save(Path(target), on_progress)

    def _live_ids(self, state: IndexState) -> list[str]:
        """The live ids in row (write) order."""
        return [state.ids[r] for r in np.flatnonzero(state.alive)]

    def _with_vectors(self, state: IndexState, ids: list[str], cache: bool = False) -> list[Document]:
        """Copies of the stored documents with these ids, each given its vector from the index."""
        return [replace(copied(d), sparse_embedding=state.vector(d.id)) for d in self._documents.get(ids, cache=cache)]

    def _checkpoint(self) -> tuple[IndexState, DocumentsState]:
        """The in-memory state a failed transaction returns to."""
        return self._ready(), self._documents.checkpoint()

    def _restore(self, checkpoint: tuple[IndexState, DocumentsState]) -> None:
        """Return to a ``_checkpoint``."""
        self._state = checkpoint[0]
        self._documents.restore(checkpoint[1])
        self._masks.clear()

    def _save_locked(self, root: Path, report: SaveProgress = quiet) -> None:
        """Write the live rows as a new generation of ``root``, then adopt the compacted state and its table."""
        state = self._ready().compacted()
        lines = self._documents.lines
        generation = self._writer.write(
            root, lambda directory: write_generation(directory, state, root, self._shared, lines, report), report
        )
        self._state = state
        self._masks.clear()
        if self._shared is None and len(state.ids):
            table = JsonlDocumentTable(generation, GENERATIONS.read_manifest(generation), list(state.ids))
            self._documents.use_table(table)

    def _ready(self) -> IndexState:
        """The index, loading it from ``path`` (or starting empty) on first use."""
        if self._state is None:
            with self._lock:
                if self._state is None:
                    self._open()
        assert self._state is not None
        return self._state

    def _open(self) -> None:
        """Open the saved generation (if any), its documents' source checked against ``document_store_path``."""
        found = GENERATIONS.read_current(Path(self.path)) if self.path else None
        state = IndexState()
        if found is not None:
            generation, manifest = found
            self._shared = _shared_source(manifest, generation / MANIFEST, self.document_store_path)
            if manifest.get("documents"):
                state, table = load_generation(generation, manifest, self._shared)
                self._documents.use_table(table)
        if self.path:
            self._writer.seen(Path(self.path), found)
        self._state = state


def _shared_source(manifest: dict[str, Any], manifest_file: Path, given: str | None) -> str | None:
    """Where a saved index reads its documents (absolute), checked against the store's ``document_store_path``."""
    saved = manifest.get("document_store_path")
    if saved is not None and not isinstance(saved, str):
        raise ValueError(f"{manifest_file}: document_store_path is {saved!r}, not a path relative to the store")
    resolved = None if saved is None else str((manifest_file.parent.parent / saved).resolve())
    if given is not None and (resolved is None or Path(given).resolve() != Path(resolved)):
        raise ValueError(
            f"document_store_path {given!r} differs from the saved index's ({resolved or 'its own documents'}); "
            f"see {manifest_file}"
        )
    return resolved
