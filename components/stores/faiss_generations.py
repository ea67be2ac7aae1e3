"""Crash-safe snapshots of the FAISS document store: one directory per saved generation.

Layout of a store directory::

    <path>/CURRENT              one line: the name of the live generation, e.g. "gen-00000007"
    <path>/gen-00000007/        vectors.faiss, tombstones.npy, documents.sqlite, manifest.json

A save writes a complete new generation under a ``.partial`` name, fsyncs every file and the directory,
renames it to its final name, then switches ``CURRENT`` with ``os.replace`` (atomic on POSIX) and only then
removes older generations. A process killed at any point therefore leaves either the previous generation
or the new one as ``CURRENT``, never a half-written one. The manifest records the size of every file so
that later damage (a truncated copy) is reported with the file's name instead of loading garbage.
"""

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

POINTER = "CURRENT"
MANIFEST = "manifest.json"
_GENERATION = re.compile(r"^gen-(\d{8})(\.partial)?$")


def read_current(root: Path) -> tuple[Path, dict[str, Any]] | None:
    """
    Find the live generation of the store at ``root`` and read its manifest.

    :returns: ``(generation directory, manifest)``, or ``None`` when ``root`` holds no saved store yet
        (missing, empty, or only leftovers of a first save that never completed).
    :raises DocumentStoreError: naming the offending file when the directory is not a store or is damaged.
    """
    if not root.exists():
        return None
    if not root.is_dir():
        raise DocumentStoreError(f"{root}: the FAISS store path exists but is not a directory")
    pointer = root / POINTER
    if not pointer.exists():
        # Only leftovers of an interrupted first save may sit here; anything else, a complete generation
        # included, means the pointer was lost, and starting empty would overwrite data at the next save.
        kept = sorted(p.name for p in root.iterdir() if not p.name.endswith(".partial") and p.name != f"{POINTER}.tmp")
        if kept:
            raise DocumentStoreError(
                f"{pointer}: missing, so {root} is not a readable FAISS store (it holds {kept[:5]})"
            )
        return None
    name = pointer.read_text(encoding="utf-8").strip()
    match = _GENERATION.match(name)
    if match is None or match.group(2):
        raise DocumentStoreError(f"{pointer}: corrupted, expected a generation name like 'gen-00000001', got {name!r}")
    generation = root / name
    return generation, _read_manifest(generation)


def _read_manifest(generation: Path) -> dict[str, Any]:
    """Read a generation's manifest and check that every file it lists is present with its recorded size."""
    path = generation / MANIFEST
    if not path.is_file():
        raise DocumentStoreError(f"{path}: missing; the generation named by {POINTER} is incomplete")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DocumentStoreError(f"{path}: corrupted JSON ({exc})") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise DocumentStoreError(f"{path}: corrupted, expected an object with a 'files' entry")
    for name, size in manifest["files"].items():
        file = generation / name
        if not file.is_file():
            raise DocumentStoreError(f"{file}: missing (listed in {path})")
        if file.stat().st_size != size:
            raise DocumentStoreError(f"{file}: corrupted, {file.stat().st_size} bytes where {path} records {size}")
    return manifest


def write_generation(root: Path, writer: Callable[[Path], dict[str, Any]]) -> Path:
    """
    Write a new generation with ``writer`` and make it the live one, crash-safely.

    :param writer: fills the directory it is given and returns the manifest fields to record.
    :returns: the directory of the new live generation.
    """
    root.mkdir(parents=True, exist_ok=True)
    number = 1 + max((int(m.group(1)) for p in root.iterdir() if (m := _GENERATION.match(p.name))), default=0)
    final = root / f"gen-{number:08d}"
    partial = root / f"{final.name}.partial"
    partial.mkdir()
    manifest = writer(partial)
    manifest["files"] = {p.name: p.stat().st_size for p in sorted(partial.iterdir()) if p.is_file()}
    (partial / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    for file in partial.iterdir():
        _fsync(file)
    _fsync(partial)
    os.rename(partial, final)
    _fsync(root)
    staged = root / f"{POINTER}.tmp"
    staged.write_text(final.name + "\n", encoding="utf-8")
    _fsync(staged)
    os.replace(staged, root / POINTER)
    _fsync(root)
    _remove_other_generations(root, keep=final.name)
    return final


def _remove_other_generations(root: Path, keep: str) -> None:
    """Delete superseded generations and leftovers of interrupted saves."""
    for entry in root.iterdir():
        if entry.name != keep and _GENERATION.match(entry.name):
            shutil.rmtree(entry, ignore_errors=True)


def _fsync(path: Path) -> None:
    """Flush a file's or a directory's data and metadata to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
