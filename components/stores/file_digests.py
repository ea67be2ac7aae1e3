"""The sha256 of every file a saved generation owns: recorded when it is written, checked before a file is used.

Sizes alone catch a truncated copy, not changed bytes: random bytes of the same size in an array, an SQL
``UPDATE`` of a stored document or a replaced JSON file would be loaded as if they were the saved index (and
numba or FAISS may crash on them). So ``Generations`` records, beside each file's size, the sha256 of its bytes
(``manifest["sha256"]``, computed as the generation is written, while its files are still in the page cache),
and a reader checks each file before it loads it: a store verifies all the files of its generation when it
opens it (``verify_all``, on parallel threads), an index the small files of its own generation when it is read,
and the embedding file (large, read only by rebuilds) before it is reused (``verified``). A file is hashed
at most once per process and version of the file: a verified file is remembered by its inode, size and change
times, so the FAISS store and the BM25 store reading the same ``documents.sqlite`` hash it once, and a store
that has just written its generation does not hash it again. The file is opened without following symbolic
links and hashed through the descriptor it is then read from, so the bytes hashed are those of that file.

sha256 rather than a faster hash: with the SHA extensions of current x86 and ARM CPUs it hashes about 1.3 GB/s
per core here (blake2b 0.95 GB/s), and it is the digest the index manifest already records for its corpus.
"""

import hashlib
import os
import re
import stat
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

DIGESTS = "sha256"  # the manifest key: {relative path: sha256 hex digest} of every file the generation owns
SHA256 = re.compile(r"[0-9a-f]{64}")
_Identity = tuple[int, int, int, int, int]
_VERIFIED: dict[_Identity, str] = {}  # file identity -> the sha256 its bytes had when this process hashed them
_VERIFIED_LOCK = threading.Lock()


def _identity(status: os.stat_result) -> _Identity:
    """What changes whenever a file's bytes do (short of resetting the clock): inode, size and change times."""
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _open_regular(path: Path) -> int:
    """A read-only descriptor of PATH, which must be a regular file and not a symbolic link.

    :raises DocumentStoreError: naming PATH when it is missing, a link or not a regular file.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise DocumentStoreError(f"{path}: missing") from None
    except OSError as error:
        what = "a symbolic link" if path.is_symlink() else (error.strerror or str(error))
        raise DocumentStoreError(f"{path}: cannot be opened as a file of the index ({what})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise DocumentStoreError(f"{path}: not a regular file")
    return descriptor


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes (hex), hashed through one descriptor; remembered as this version's digest."""
    descriptor = _open_regular(path)
    with os.fdopen(descriptor, "rb") as file:
        before = _identity(os.fstat(descriptor))
        digest = hashlib.file_digest(file, "sha256").hexdigest()
        if _identity(os.fstat(descriptor)) == before:  # unchanged while it was read: the digest is this version's
            with _VERIFIED_LOCK:
                _VERIFIED[before] = digest
    return digest


def _known_digest(path: Path) -> str:
    """The sha256 of PATH's bytes now: remembered if this version of the file was hashed before, else hashed."""
    descriptor = _open_regular(path)
    try:
        identity = _identity(os.fstat(descriptor))
    finally:
        os.close(descriptor)
    with _VERIFIED_LOCK:
        known = _VERIFIED.get(identity)
    return known if known is not None else sha256_file(path)


def verified(generation: Path, manifest: Mapping[str, Any], name: str) -> Path:
    """
    GENERATION/NAME, once its bytes have the sha256 that the generation's manifest records for it.

    :param manifest: the generation's manifest as ``Generations.read_manifest`` returned it (its digest record
        checked for shape).
    :raises DocumentStoreError: one line naming the file: not recorded, missing, a link, or other bytes.
    """
    path = generation / name
    expected = (manifest.get(DIGESTS) or {}).get(name)
    if not isinstance(expected, str):
        raise DocumentStoreError(f"{path}: not among the files {generation / 'manifest.json'} records")
    found = _known_digest(path)
    if found != expected:
        raise DocumentStoreError(
            f"{path}: corrupted or changed since it was saved (its sha256 is {found[:16]}..., "
            f"{generation / 'manifest.json'} records {expected[:16]}...)"
        )
    return path


def verify_all(generation: Path, manifest: Mapping[str, Any], names: Iterable[str] | None = None) -> None:
    """``verified`` for each of NAMES (default: every file the manifest records), hashed on parallel threads
    (hashlib releases the GIL), so opening a generation costs about its largest file's hashing, not their sum.

    :raises DocumentStoreError: for the first file, in the manifest's order, that is not as saved.
    """
    wanted = list((manifest.get(DIGESTS) or {}) if names is None else names)
    if len(wanted) <= 1:
        for name in wanted:
            verified(generation, manifest, name)
        return
    with ThreadPoolExecutor(max_workers=min(len(wanted), os.cpu_count() or 1, 8)) as pool:
        for future in [pool.submit(verified, generation, manifest, name) for name in wanted]:
            future.result()


def check_relative(name: Any, where: Path) -> str:
    """NAME as a manifest may list it: a relative path inside the generation (no ``..``, nothing absolute).

    :raises DocumentStoreError: naming WHERE (the manifest) and the entry.
    """
    path = PurePosixPath(name) if isinstance(name, str) else None
    if path is None or str(path) != name or path.is_absolute() or ".." in path.parts or name in ("", "."):
        raise DocumentStoreError(
            f"{where}: corrupted, file entry {str(name)[:80]!r} is not a path inside the generation"
        )
    return str(name)
