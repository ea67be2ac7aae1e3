"""Indexes UltraRAG built where a parameter file places needle's, and their replacement by a needle index.

UltraRAG keeps a FAISS index as one file (`index_backend_configs.faiss.index_path`, e.g. ``index/index.index``),
BM25 as bm25s' directory (`backend_configs.bm25.save_path`, e.g. ``index/bm25``) and Milvus Lite as its database
(`index_backend_configs.milvus.uri`, e.g. ``index/milvus_demo.db``); needle keeps a directory of generations at
each of those paths. ``foreign_kind`` recognises what UltraRAG writes there (a FAISS file by its header, bm25s'
files by their names, a Milvus Lite database as a file or directory), and nothing else: a path holding anything
else is never replaced, whatever `overwrite` says.

``build_at`` builds the needle index at such a path. Where UltraRAG's index is, `overwrite=false` refuses in one
line; `overwrite=true` builds the needle index beside it first (``.NAME.needle-new``), then swaps the two with
two renames (the old one to ``.NAME.ultrarag-old``, the new one to NAME) and removes the old one. A crash leaves:

* during the build: UltraRAG's index untouched at NAME, and a partial ``.NAME.needle-new``, removed by the next
  build at NAME;
* between the two renames: nothing at NAME (a search there says the index is not found), the complete needle
  index beside it; the next build at NAME finishes the swap first;
* after them: the needle index at NAME, and ``.NAME.ultrarag-old``, removed by the next build at NAME.

Never is UltraRAG's index removed before the needle index that replaces it is whole.
"""

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from components.atomic_files import fsync_directory
from components.stores.crash_safe_generations import POINTER
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.generations import check_target

__all__ = ["build_at", "foreign_kind"]

T = TypeVar("T")
# The files bm25s' ``BM25.save`` and UltraRAG's tokenizer (``save_stopwords``, ``save_vocab``) write.
BM25S_FILES = {
    "params.index.json", "vocab.index.json", "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy",
    "nonoccurrence_array.index.npy", "corpus.jsonl", "corpus.mmindex.json", "stopwords.tokenizer.json",
    "vocab.tokenizer.json",
}  # fmt: skip
MILVUS_LITE_ENTRIES = {"collections", "databases", "LOCK", ".database-staging"}  # a Milvus Lite directory
SQLITE_HEADER = b"SQLite format 3\x00"  # older Milvus Lite keeps its database in one SQLite file


def foreign_kind(path: Path, key: str) -> str | None:
    """What UltraRAG built at PATH (KEY: the parameter file's key naming it), or None where a needle index may be
    built as it is (nothing there, an empty directory, a needle index).

    :raises NeedleError: PATH holds something else: neither needle's nor UltraRAG's, so never replaced.
    """
    if not path.exists():
        return None
    if path.is_file():
        kind = _file_kind(path)
    else:
        try:
            check_target(path)  # empty, or a needle index: needle's own
            return None
        except NeedleError:
            kind = _directory_kind(path)
    if kind is None:
        raise NeedleError(
            f"{path} ({key}) holds neither a needle index nor an index UltraRAG builds; refusing to replace it: "
            f"move it away or choose another {key}"
        )
    return kind


def _file_kind(path: Path) -> str | None:
    """UltraRAG's index file at PATH: FAISS (``faiss.write_index``: a four-letter code ``I...`` first) or a Milvus
    Lite database (SQLite); None for any other file."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError:
        return None
    if head == SQLITE_HEADER:
        return "a Milvus Lite database"
    if len(head) >= 4 and head[:1] == b"I" and head[:4].isalnum() and path.suffix == ".index":
        return "a FAISS index file"
    return None


def _directory_kind(path: Path) -> str | None:
    """UltraRAG's index directory at PATH: bm25s' files, or a Milvus Lite database; None for any other."""
    try:
        names = {entry.name for entry in path.iterdir()}
    except OSError:
        return None
    if "params.index.json" in names and names <= BM25S_FILES:
        return "a bm25s index directory"
    if "collections" in names and names <= MILVUS_LITE_ENTRIES:
        return "a Milvus Lite database"
    return None


def staging(path: Path) -> Path:
    """Where the needle index replacing UltraRAG's at PATH is built."""
    return path.with_name(f".{path.name}.needle-new")


def retired(path: Path) -> Path:
    """Where UltraRAG's index at PATH waits between the two renames and until it is removed."""
    return path.with_name(f".{path.name}.ultrarag-old")


def build_at(path: Path, key: str, overwrite: bool, build: Callable[[Path], T]) -> T:
    """BUILD (a function building a needle index into the directory it is given) at PATH, the place KEY names.

    :raises NeedleError: UltraRAG's index is at PATH and OVERWRITE is off (naming PATH and `overwrite=true`), or
        PATH holds something else (``foreign_kind``).
    """
    recover(path)
    kind = foreign_kind(path, key)
    if kind is None:
        return build(path)
    if not overwrite:
        raise NeedleError(
            f"{path} ({key}) holds {kind} that UltraRAG built, not a needle index: pass overwrite=true to replace "
            "it by a needle index"
        )
    new, old = staging(path), retired(path)
    try:
        result = build(new)
    except BaseException:
        if _exists(new):
            _remove(new)  # a failed build: UltraRAG's index stays, nothing beside it
        raise
    os.rename(path, old)
    fsync_directory(path.parent)
    os.rename(new, path)
    fsync_directory(path.parent)
    _remove(old)
    return result


def recover(path: Path) -> None:
    """Finish or clean up what a build at PATH killed midway left (see the module docstring)."""
    new, old = staging(path), retired(path)
    if _exists(old) and not _exists(path):  # killed between the two renames
        os.rename(new if (new / POINTER).is_file() else old, path)  # the needle index is whole: finish the swap
        fsync_directory(path.parent)
    if _exists(old):
        _remove(old)
    if _exists(new):
        _remove(new)  # killed while building it: never made live


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _remove(path: Path) -> None:
    """Remove PATH, a file or a directory tree."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
