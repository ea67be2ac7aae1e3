"""Crash-safe saved generations of a store directory, shared by the FAISS and the BM25 document stores.

Layout of a store directory::

    <path>/CURRENT              one line: the name of the live generation, e.g. "gen-00000007"
    <path>/gen-00000007/        the store's own files, plus manifest.json

A save writes a complete new generation under a ``.partial`` name, fsyncs every file and the directory,
renames it to its final name, then switches ``CURRENT`` with ``os.replace`` (atomic on POSIX) and only then
removes older generations and leftovers of interrupted saves. A process killed at any point therefore leaves
either the previous generation or the new one as ``CURRENT``, never a half-written one. The manifest records
the size of every file so that later damage (a truncated copy) is reported with the file's name instead of
loading garbage. What goes into a generation is the store's business: it passes a writer that fills the
directory, and reads the files back itself from the directory this module finds.
"""

import json
import os
import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

from components.stores.directory_lock import LOCK_FILE

POINTER = "CURRENT"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Generations:
    """
    The generation layout of one kind of store.

    :param kind: how errors name the store, e.g. "FAISS store" ("<path> is not a FAISS store directory").
    :param digits: width of the generation number in directory names; fixed per store by directories
        already saved (FAISS 8, BM25 6), so it must not change.
    :param stamp: manifest fields every generation is written with and must carry when read (a format tag).
    :param keep: older complete generations kept after a switch, so that a reader which read ``CURRENT``
        just before it changed can still open the generation it was pointed at (0: remove them at once).
    """

    kind: str
    digits: int
    stamp: dict[str, Any] = field(default_factory=dict)
    keep: int = 0

    def current(self, root: Path) -> Path | None:
        """
        The live generation directory of the store at ``root``.

        :returns: ``None`` when ``root`` holds no saved store yet (missing, empty, or only leftovers of a
            first save that never completed).
        :raises DocumentStoreError: naming the file, when ``root`` is not such a store or its pointer is damaged.
        """
        if not root.exists():
            return None
        if not root.is_dir():
            raise DocumentStoreError(f"{root}: the {self.kind} path exists but is not a directory")
        pointer = root / POINTER
        if not pointer.is_file():
            self._check_pointerless(root)
            return None
        name = pointer.read_text(encoding="utf-8", errors="replace").strip()
        match = self._match(name)
        if match is None or match.group(2):
            raise DocumentStoreError(
                f"{pointer}: corrupted, expected a generation name like {self._name(1)!r}, got {name[:40]!r}"
            )
        if not (root / name).is_dir():
            raise DocumentStoreError(f"{root / name}: missing, although {pointer} names it as the live generation")
        return root / name

    def read_current(self, root: Path) -> tuple[Path, dict[str, Any]] | None:
        """The live generation of the store at ``root`` and its checked manifest, or ``None`` when none is saved."""
        generation = self.current(root)
        return None if generation is None else (generation, self.read_manifest(generation))

    def read_manifest(self, generation: Path) -> dict[str, Any]:
        """Read a generation's manifest; check its stamp and that every listed file has its recorded size."""
        path = generation / MANIFEST
        if not path.is_file():
            raise DocumentStoreError(f"{path}: missing; the generation named by {POINTER} is incomplete")
        manifest = load_json(path)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
            raise DocumentStoreError(f"{path}: corrupted, expected an object with a 'files' entry")
        for key, expected in self.stamp.items():
            if manifest.get(key) != expected:
                got = manifest.get(key)
                raise DocumentStoreError(f"{path}: {key} {got!r} is not supported (expected {expected!r})")
        for name, size in manifest["files"].items():
            file = generation / name
            if not file.is_file():
                raise DocumentStoreError(f"{file}: missing (listed in {path})")
            if file.stat().st_size != size:
                raise DocumentStoreError(f"{file}: corrupted, {file.stat().st_size} bytes where {path} records {size}")
        return manifest

    def write(self, root: Path, writer: Callable[[Path], dict[str, Any]]) -> Path:
        """
        Write a new generation with ``writer`` and make it the live one, crash-safely (see the module docstring).

        A failure before the switch (the writer raising, a full disk) removes the partial generation and leaves
        the live one as it was. Each manifest gets a random ``generation_id``, so that a writer can tell its own
        generation from another one of the same name (a directory rebuilt and swapped in by someone else).

        :param writer: fills the directory it is given and returns the manifest fields to record.
        :returns: the directory of the new live generation.
        """
        root.mkdir(parents=True, exist_ok=True)
        number = 1 + max((int(m.group(1)) for p in root.iterdir() if (m := self._match(p.name))), default=0)
        final = root / self._name(number)
        partial = root / f"{final.name}.partial"
        staged = root / f"{POINTER}.tmp"
        try:
            partial.mkdir()
            self._fill(partial, writer)
            os.rename(partial, final)
            _fsync(root)
            staged.write_text(final.name + "\n", encoding="utf-8")
            _fsync(staged)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            shutil.rmtree(final, ignore_errors=True)
            staged.unlink(missing_ok=True)
            raise
        os.replace(staged, root / POINTER)
        _fsync(root)
        self.remove_stale(root, live=final.name)
        return final

    def _fill(self, partial: Path, writer: Callable[[Path], dict[str, Any]]) -> None:
        """Let ``writer`` fill ``partial``, then add the manifest (stamp, id, file sizes) and fsync everything."""
        manifest = {**self.stamp, **writer(partial), "generation_id": uuid.uuid4().hex}
        manifest["files"] = {p.name: p.stat().st_size for p in sorted(partial.iterdir()) if p.is_file()}
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
        for file in partial.iterdir():
            _fsync(file)
        _fsync(partial)

    def remove_stale(self, root: Path, live: str) -> None:
        """Remove leftovers of interrupted saves and the complete generations older than the ``keep`` newest."""
        entries = [(m, p) for p in root.iterdir() if (m := self._match(p.name)) and p.name != live]
        complete = sorted((int(m.group(1)) for m, _ in entries if not m.group(2)), reverse=True)
        kept = {self._name(number) for number in complete[: self.keep]}
        for _, entry in entries:
            if entry.name not in kept:
                shutil.rmtree(entry, ignore_errors=True)

    def _check_pointerless(self, root: Path) -> None:
        """
        Accept a directory without ``CURRENT`` only when it holds nothing but leftovers of a first save.

        Anything else, a complete generation included, means the pointer was lost, and starting empty would
        overwrite data at the next save.
        """
        pointer = root / POINTER
        names = sorted(p.name for p in root.iterdir() if p.name not in (f"{POINTER}.tmp", LOCK_FILE))
        strangers = [n for n in names if not self._match(n)]
        if strangers:
            raise DocumentStoreError(
                f"{pointer}: missing, so {root} is not a {self.kind} directory (it holds {strangers[:5]})"
            )
        complete = [n for n in names if not n.endswith(".partial")]
        if complete:
            raise DocumentStoreError(
                f"{pointer}: missing, although {root} holds saved generation(s) {complete[:5]}: write the name of the "
                f"one to use into {pointer}, or remove the directory"
            )

    def _name(self, number: int) -> str:
        return f"gen-{number:0{self.digits}d}"

    def _match(self, name: str) -> re.Match[str] | None:
        """Match a generation directory name (final or ``.partial``) of this layout's width."""
        return re.fullmatch(rf"gen-(\d{{{self.digits}}})(\.partial)?", name)


def load_json(path: Path) -> Any:
    """Parse a JSON file, or raise DocumentStoreError naming it."""
    if not path.is_file():
        raise DocumentStoreError(f"{path}: missing")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DocumentStoreError(f"{path}: corrupted JSON ({exc})") from exc


def _fsync(path: Path) -> None:
    """Flush a file's or a directory's data and metadata to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
