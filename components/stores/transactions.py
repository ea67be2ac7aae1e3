"""All-or-nothing mutations and one writer per store directory, shared by the FAISS and BM25 stores.

A mutating call (write, delete, update, delete all) of a store with a ``path`` and ``autosave`` runs as one
transaction: under the directory's writer lock (``DirectoryLock``), after checking that nobody saved another
generation since this store object loaded or wrote its own (optimistic concurrency: two store objects, in one
process or two, can never silently overwrite each other's documents), the store changes its in-memory state
and saves a new generation. If anything fails on the way — a document the save cannot encode, a full or
vanished disk — the in-memory state is restored to what it was and the saved generation is left untouched,
so the next call works. Readers never take the lock.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from haystack.document_stores.errors import DocumentStoreError

from components.stores.crash_safe_generations import Generations
from components.stores.directory_lock import DirectoryLock
from components.stores.file_digests import DigestProgress

T = TypeVar("T")


class SingleWriter:
    """Saves of one store object: one writer per directory, never over a generation this object did not see."""

    def __init__(self, generations: Generations) -> None:
        """:param generations: The generation layout of the store kind (names and manifest stamp)."""
        self._generations = generations
        self._seen: dict[Path, tuple[str, Any] | None] = {}
        self._locks: dict[Path, DirectoryLock] = {}

    def seen(self, root: Path, found: tuple[Path, dict[str, Any]] | None) -> None:
        """Record the generation (and its manifest) this store loaded from ``root`` (None: no saved store there)."""
        self._seen[root.resolve()] = None if found is None else (found[0].name, found[1].get("generation_id"))

    @contextmanager
    def locked(self, root: Path) -> Iterator[None]:
        """
        Hold ``root``'s writer lock, after checking that its live generation is the one this store saw.

        :raises DirectoryLockedError: When another writer holds the lock (naming it).
        :raises DocumentStoreError: When another writer saved since this store loaded: reopen the store.
        """
        key = root.resolve()
        lock = self._locks.setdefault(key, DirectoryLock(root, purpose=f"writing a {self._generations.kind}"))
        with lock:
            found = self._generations.read_current(root)
            live = None if found is None else (found[0].name, found[1].get("generation_id"))
            if live != self._seen.get(key):
                seen = self._seen.get(key)
                raise DocumentStoreError(
                    f"{root}: another writer saved {live[0] if live else 'nothing (the store was removed)'} since this "
                    f"{self._generations.kind} object read {seen[0] if seen else 'it (empty)'}; nothing was changed. "
                    "Reopen the store (create a new store object) and apply your change again"
                )
            yield

    def write(
        self, root: Path, writer: Callable[[Path], dict[str, Any]], on_progress: DigestProgress | None = None
    ) -> Path:
        """Write a new generation of ``root`` (call inside ``locked``) and record it as this store's own.

        :param on_progress: told the ``digesting`` stage, in bytes, as the files the writer wrote are hashed for
            the manifest (``Generations.write``): a store's save forwards its own progress callback here.
        """
        generation = self._generations.write(root, writer, on_progress)
        self._seen[root.resolve()] = (generation.name, self._generations.read_manifest(generation)["generation_id"])
        return generation


class TransactionalStore:
    """
    Mixin of the stores: ``_mutate`` runs a change all-or-nothing (see the module docstring).

    A store provides ``path``, ``autosave``, ``_lock`` (an RLock), ``_writer`` (a SingleWriter), ``_ready()``
    (load on first use), ``_checkpoint()``/``_restore(checkpoint)`` (its in-memory state) and
    ``_save_locked(root)`` (write a generation; called with the lock held).
    """

    path: str | None
    autosave: bool
    _lock: threading.RLock
    _writer: SingleWriter

    def _mutate(self, change: Callable[[], tuple[T, bool]]) -> T:
        """
        Run ``change`` (returning its result and whether it changed anything) and, with autosave, save it.

        On any failure the in-memory state is restored and the exception propagates; the saved generation is
        left as it was.
        """
        with self._lock:
            self._ready()
            root = Path(self.path) if self.autosave and self.path is not None else None
            with self._writer.locked(root) if root else nullcontext():
                checkpoint = self._checkpoint() if root else None
                try:
                    result, changed = change()
                    if root and changed:
                        self._save_locked(root)
                except BaseException:
                    if root:
                        self._restore(checkpoint)
                    raise
                return result

    def _save(self, root: Path, report: Any = None) -> None:
        """Save to ``root`` now, under its writer lock (``save()``); ``report``, when given, is the store's progress
        callback, handed to ``_save_locked``."""
        with self._lock:
            self._ready()
            with self._writer.locked(root):
                self._save_locked(root, *([report] if report else []))

    def _ready(self) -> Any:
        raise NotImplementedError

    def _checkpoint(self) -> Any:
        raise NotImplementedError

    def _restore(self, checkpoint: Any) -> None:
        raise NotImplementedError

    def _save_locked(self, root: Path, *report: Any) -> None:
        raise NotImplementedError
