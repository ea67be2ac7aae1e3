"""Crash-safe saved generations of a BM25 store directory, and loaders that name the file that is wrong.

Layout of a store directory (the seed's ``save_path``)::

    <path>/CURRENT                 one line: the live generation, e.g. "gen-000003"
    <path>/gen-000003/manifest.json     format, tokenizer and BM25 settings, document source, file sizes
    <path>/gen-000003/*.index.npy, vocab.index.json, params.index.json   the bm25s index (memory-mappable)
    <path>/gen-000003/ids.json, tokens.npy, token_offsets.npy          row ids and term ids (for compaction)
    <path>/gen-000003/documents.jsonl, documents.offsets.npy           the documents, unless shared

A save fills ``gen-N.partial``, fsyncs it, renames it ``gen-N``, and only then points ``CURRENT`` at it with
``os.replace`` (atomic), removing older generations last. A process killed at any moment leaves ``CURRENT``
naming a complete generation: the old one, or the new one. Leftover ``.partial`` directories and orphaned
generations are removed by the next save.
"""

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from haystack.document_stores.errors import DocumentStoreError

POINTER = "CURRENT"
MANIFEST = "manifest.json"
FORMAT = "needle-bm25"
FORMAT_VERSION = 1
_GENERATION = re.compile(r"^gen-(\d{6})(\.partial)?$")


def current_generation(root: Path) -> Path | None:
    """
    The live generation directory of the store at ``root``.

    :returns: ``None`` when ``root`` holds no saved index yet (missing, empty, or only a partial first save).
    :raises DocumentStoreError: naming the file, when ``root`` is not a BM25 store or its pointer is damaged.
    """
    if not root.exists():
        return None
    if not root.is_dir():
        raise DocumentStoreError(f"{root}: the BM25 store path exists but is not a directory")
    pointer = root / POINTER
    if not pointer.is_file():
        names = sorted(p.name for p in root.iterdir() if p.name != f"{POINTER}.tmp")
        strangers = [n for n in names if not _GENERATION.match(n)]
        if strangers:
            raise DocumentStoreError(
                f"{pointer}: missing, so {root} is not a BM25 index directory (it holds {strangers[:5]})"
            )
        complete = [n for n in names if not n.endswith(".partial")]
        if complete:
            raise DocumentStoreError(
                f"{pointer}: missing, although {root} holds saved generation(s) {complete[:5]}: write the name of the "
                f"one to use into {pointer}, or remove the directory"
            )
        return None
    name = pointer.read_text(encoding="utf-8", errors="replace").strip()
    match = _GENERATION.match(name)
    if match is None or match.group(2):
        raise DocumentStoreError(
            f"{pointer}: corrupted, expected a generation name like 'gen-000001', got {name[:40]!r}"
        )
    if not (root / name).is_dir():
        raise DocumentStoreError(f"{root / name}: missing, although {pointer} names it as the live generation")
    return root / name


def read_manifest(generation: Path) -> dict[str, Any]:
    """Read a generation's manifest and check its format and that every listed file has its recorded size."""
    path = generation / MANIFEST
    manifest = load_json(path)
    well_formed = isinstance(manifest, dict) and isinstance(manifest.get("files"), dict)
    if not well_formed or manifest.get("format") != FORMAT:
        raise DocumentStoreError(f"{path}: corrupted, expected a '{FORMAT}' manifest with a 'files' entry")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise DocumentStoreError(
            f"{path}: format_version {manifest.get('format_version')!r} is not supported (expected {FORMAT_VERSION})"
        )
    for name, size in manifest["files"].items():
        file = generation / name
        if not file.is_file():
            raise DocumentStoreError(f"{file}: missing (listed in {path})")
        if file.stat().st_size != size:
            raise DocumentStoreError(f"{file}: corrupted, {file.stat().st_size} bytes where {path} records {size}")
    return manifest


def write_generation(root: Path, writer: Callable[[Path], dict[str, Any]]) -> Path:
    """
    Write a new generation with ``writer`` and make it the live one, crash-safely (see the module docstring).

    :param writer: fills the directory it is given and returns the manifest fields to record.
    :returns: the directory of the new live generation.
    """
    root.mkdir(parents=True, exist_ok=True)
    number = 1 + max((int(m.group(1)) for p in root.iterdir() if (m := _GENERATION.match(p.name))), default=0)
    final = root / f"gen-{number:06d}"
    partial = root / f"{final.name}.partial"
    partial.mkdir()
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, **writer(partial)}
    manifest["files"] = {p.name: p.stat().st_size for p in sorted(partial.iterdir()) if p.is_file()}
    (partial / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
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
    for entry in root.iterdir():
        if entry.name != final.name and _GENERATION.match(entry.name):
            shutil.rmtree(entry, ignore_errors=True)
    return final


def load_json(path: Path) -> Any:
    """Parse a JSON file, or raise DocumentStoreError naming it."""
    if not path.is_file():
        raise DocumentStoreError(f"{path}: missing")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DocumentStoreError(f"{path}: corrupted JSON ({exc})") from exc


def load_array(path: Path, dtype_kind: str, mmap: bool = True) -> np.ndarray:
    """Open a 1-D ``.npy`` array of the given kind ('i' integer, 'f' float), memory-mapped by default."""
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError as exc:
        raise DocumentStoreError(f"{path}: missing") from exc
    except (ValueError, OSError, EOFError) as exc:
        raise DocumentStoreError(f"{path}: corrupted .npy file ({exc})") from exc
    if array.ndim != 1 or array.dtype.kind != dtype_kind:
        raise DocumentStoreError(
            f"{path}: corrupted, expected a 1-D array of kind {dtype_kind!r}, got {array.dtype} {array.shape}"
        )
    return array


def _fsync(path: Path) -> None:
    """Flush a file's or a directory's data and metadata to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
