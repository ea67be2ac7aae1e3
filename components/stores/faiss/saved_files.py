"""Checks of a saved FAISS store generation's files, run after their sha256 is verified and before they are used.

``crash_safe_generations.verified`` proves that a file holds the bytes saved with the generation; these checks
refuse what the store never writes even so (a generation whose manifest and files were rewritten together, or
a bug), before FAISS searches with it or a tombstone hides a row: the index's dimension, vector count and
metric are the manifest's, its ids and the tombstones are rows the store handed out, and no row is repeated.
Every refusal is a DocumentStoreError naming the file; so is a write FAISS cannot finish (``write_index``).
"""

import hashlib
import re
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from haystack.document_stores.errors import DocumentStoreError

from components.stores.file_digests import remember

WRITE_CHUNK = 4 << 20  # bytes FAISS hands over per call while it writes an index (its own default is 1 MiB)


def read_index(path: Path) -> faiss.Index:
    """The FAISS index in PATH (a verified file); an unreadable one is a DocumentStoreError naming it."""
    try:
        return faiss.read_index(str(path))
    except RuntimeError as exc:
        raise DocumentStoreError(f"{path}: corrupted FAISS index ({first_line(exc)})") from exc


def write_index(index: faiss.Index, path: Path) -> None:
    """Write INDEX to PATH, a new file, hashing its bytes as FAISS hands them over, so that the manifest of the
    generation it belongs to records its sha256 without reading gigabytes back (``file_digests.remember``).

    :raises DocumentStoreError: naming the file and the system's reason ("No space left on device") when it cannot
        be written, or what FAISS said when it cannot write this index.
    """
    digest = hashlib.sha256()
    failed: list[OSError] = []
    hashed: list[Future[None]] = []  # the chunk being hashed, on a thread of its own, while the next is written

    def write(data: bytes) -> None:
        if failed:  # FAISS goes on handing over the rest: written nowhere, the first failure is raised below
            return
        if hashed:
            hashed.pop().result()
        hashed.append(hasher.submit(digest.update, data))
        try:
            handle.write(data)
        except OSError as error:
            failed.append(error)

    try:
        with path.open("wb") as handle, ThreadPoolExecutor(1) as hasher:
            try:
                writer = faiss.PyCallbackIOWriter(write, WRITE_CHUNK)  # type: ignore[attr-defined]  # not in faiss's stubs
                faiss.write_index(index, writer)
            except RuntimeError as exc:
                raise DocumentStoreError(f"{path}: cannot write the FAISS index ({write_failure(exc)})") from exc
    except OSError as error:  # the last bytes, flushed as the file closes
        failed.append(error)
    if failed:
        raise DocumentStoreError(f"{path}: cannot write the FAISS index ({failed[0].strerror or failed[0]})")
    remember(path, digest.hexdigest())


def write_failure(exc: RuntimeError) -> str:
    """Why FAISS could not write: the system's words it ends its message with ("... 93950 != 129824 (No space left
    on device)"), else the message's first line."""
    message = str(exc)
    reason = re.search(r"\(([^()]+)\)\s*$", message)
    return reason.group(1) if reason else first_line(exc)


def first_line(exc: BaseException) -> str:
    """What FAISS said, in one line: its message's first line, at most 160 characters (no C++ stack)."""
    return (str(exc).splitlines() or [""])[0][:160]


def check_index(index: faiss.Index, path: Path, metric: str, manifest: Mapping[str, Any]) -> None:
    """The index has the manifest's dimension, vector count and metric, and (an id map) ids that are rows."""
    metric_type = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    found = {"dimension": index.d, "vector count": index.ntotal, "metric": index.metric_type}
    wanted = {"dimension": manifest["embedding_dim"], "vector count": manifest["vectors"], "metric": metric_type}
    for name, value in found.items():
        if value != wanted[name]:
            raise DocumentStoreError(f"{path}: corrupted, its {name} is {value}, the manifest gives {wanted[name]}")
    if isinstance(index, faiss.IndexIDMap2):
        check_rows(faiss.vector_to_array(index.id_map), path, manifest["next_row"], "ids")


def load_tombstones(path: Path, manifest: Mapping[str, Any], ntotal: int) -> np.ndarray:
    """The deleted rows still in FAISS: a 1-D int64 array (no pickle) of distinct rows, at most ``ntotal``."""
    try:
        tombstones: np.ndarray = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise DocumentStoreError(f"{path}: corrupted ({str(exc)[:160]})") from exc
    if tombstones.ndim != 1 or tombstones.dtype != np.dtype("int64") or len(tombstones) > ntotal:
        raise DocumentStoreError(
            f"{path}: corrupted, expected at most {ntotal} int64 rows, got {tombstones.dtype} {tombstones.shape}"
        )
    check_rows(tombstones, path, manifest["next_row"], "rows")
    return tombstones


def check_rows(rows: np.ndarray, path: Path, next_row: int, what: str) -> None:
    """ROWS are distinct rows the store handed out, in [0, next_row); else DocumentStoreError naming PATH."""
    if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= next_row or len(np.unique(rows)) != len(rows)):
        raise DocumentStoreError(f"{path}: corrupted, its {what} must be distinct rows in [0, {next_row})")
