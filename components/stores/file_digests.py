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

Hashing GBs of embeddings, vectors and documents takes seconds, so the writer (``digest_files``) and the
checker (``verify_all``) take an optional ``on_progress(stage, done, total)``: ``done`` of ``total`` bytes hashed,
called with 0 as the stage starts, after each ``CHUNK`` bytes, and with ``total`` once done (a file already hashed
by this process counts as done at once). ``needle index`` shows it as progress lines; this package does not
import ``needle``.

sha256 rather than a faster hash: with the SHA extensions of current x86 and ARM CPUs it hashes about 1.3 GB/s
per core here (blake2b 0.95 GB/s), and it is the digest the index manifest already records for its corpus.
"""

import hashlib
import io
import os
import re
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

DIGESTS = "sha256"  # the manifest key: {relative path: sha256 hex digest} of every file the generation owns
SHA256 = re.compile(r"[0-9a-f]{64}")
_Identity = tuple[int, int, int, int, int]
_VERIFIED: dict[_Identity, str] = {}  # file identity -> the sha256 its bytes had when this process hashed them
_VERIFIED_LOCK = threading.Lock()
DigestProgress = Callable[[str, int, int], None]
"""``on_progress(stage, done, total)``: DONE of TOTAL bytes hashed through STAGE (``DIGESTING`` or ``CHECKING``)."""
Advance = Callable[[int], None]  # told each count of bytes hashed, as it is
DIGESTING = "digesting"  # the stage of a generation being written (digest_files)
CHECKING = "checking files"  # the stage of a generation being opened (verify_all)
CHUNK = 1 << 20  # bytes hashed between two reports: as fast as one hashlib.file_digest call, measured


class _Tally:
    """The bytes hashed so far of TOTAL, each count told to ON_PROGRESS as STAGE; several threads may advance it
    (each report is made under the lock, so the callback sees DONE grow, and never from two threads at once)."""

    def __init__(self, on_progress: DigestProgress | None, stage: str, total: int) -> None:
        """Report the stage started (0 of TOTAL bytes done)."""
        self._report, self._stage, self._total = on_progress, stage, total
        self._done = 0
        self._lock = threading.Lock()
        if on_progress is not None:
            on_progress(stage, 0, total)

    def advance(self, n: int) -> None:
        """N more bytes hashed (a file that grew since it was measured stops the count at the total)."""
        if self._report is None or n <= 0:
            return
        with self._lock:
            self._done = min(self._done + n, self._total)
            self._report(self._stage, self._done, self._total)


def _identity(status: os.stat_result) -> _Identity:
    """What changes whenever a file's bytes do (short of resetting the clock): inode, size and change times."""
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def open_regular(path: Path) -> int:
    """A read-only descriptor of PATH, which must be a regular file and not a symbolic link.

    Opened without waiting (``O_NONBLOCK``, no effect on a regular file): a FIFO planted in its place is refused at
    once instead of blocking the reader until some writer opens it.

    :raises DocumentStoreError: naming PATH when it is missing, a link or not a regular file.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise DocumentStoreError(f"{path}: missing") from None
    except OSError as error:
        what = "a symbolic link" if path.is_symlink() else (error.strerror or str(error))
        raise DocumentStoreError(f"{path}: cannot be opened as a file of the index ({what})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise DocumentStoreError(f"{path}: not a regular file")
    return descriptor


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a small file that someone else may have written (a JSON setting beside an index).

    Opened as the files of a generation are (``open_regular``: no link followed, a FIFO or device refused without
    waiting), and read only up to LIMIT bytes: a file any larger is refused rather than read into memory.

    :raises DocumentStoreError: naming PATH when it is missing, a link, not a regular file or over LIMIT bytes.
    """
    with os.fdopen(open_regular(path), "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise DocumentStoreError(f"{path}: larger than {limit:,} bytes, more than such a file ever holds")
    return data


def sha256_file(path: Path, advance: Advance | None = None) -> str:
    """The sha256 of a file's bytes (hex), hashed through one descriptor; remembered as this version's digest.

    :param advance: told each count of bytes as it is hashed (``CHUNK`` at a time).
    """
    descriptor = open_regular(path)
    with os.fdopen(descriptor, "rb") as file:
        before = _identity(os.fstat(descriptor))
        digest = _hash(file, advance)
        if _identity(os.fstat(descriptor)) == before:  # unchanged while it was read: the digest is this version's
            with _VERIFIED_LOCK:
                _VERIFIED[before] = digest
    return digest


def _hash(file: io.BufferedReader, advance: Advance | None) -> str:
    """The sha256 (hex) of FILE's bytes from where it stands to its end, read ``CHUNK`` bytes at a time, each count
    told to ADVANCE (hashlib releases the GIL while it hashes a chunk)."""
    digest = hashlib.sha256()
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    while size := file.readinto(buffer):
        digest.update(view[:size])
        if advance is not None:
            advance(size)
    return digest.hexdigest()


def digest_files(
    directory: Path, sizes: Mapping[str, int], on_progress: DigestProgress | None = None
) -> dict[str, str]:
    """The sha256 of each file of DIRECTORY that SIZES names (relative path -> its size in bytes): a generation
    being written, whose files are still in the page cache. A file this process has already hashed in this very
    version (a part `needle tune` links from the live generation and has just checked, an embedding file hashed
    as it was written: ``remember``) is not read again (``_known_digest``); the others are hashed on parallel
    threads, as ``verify_all`` does, so the largest file's hashing is about what it costs.

    :param on_progress: see the module docstring; the stage is ``DIGESTING``, the total the sum of SIZES.
    """
    tally = _Tally(on_progress, DIGESTING, sum(sizes.values()))
    names = list(sizes)
    if len(names) <= 1:
        return {name: _known_digest(directory / name, tally.advance) for name in names}
    with ThreadPoolExecutor(max_workers=min(len(names), os.cpu_count() or 1, 8)) as pool:
        futures = [pool.submit(_known_digest, directory / name, tally.advance) for name in names]
        return {name: future.result() for name, future in zip(names, futures, strict=True)}


def remember(path: Path, digest: str) -> None:
    """Record DIGEST as the sha256 of PATH as it is now, which its writer computed from the bytes it wrote (and
    has closed the file since), so that ``digest_files`` need not read it again; a later change of the file
    changes what identifies this version (``_identity``), so the record then no longer applies."""
    identity = _identity_of(path)
    with _VERIFIED_LOCK:
        _VERIFIED[identity] = digest


@contextmanager
def hashed_meanwhile(path: Path) -> Iterator[None]:
    """Hash PATH, a file of a generation being written that nothing writes any more, on a thread of its own while
    the body runs (the next file being written: hashlib and the writes both release the GIL), so that
    ``digest_files`` then finds its digest known instead of reading it after the others. The body's exception, if
    any, is raised once the hashing is done; the hashing's own (the file gone) only when the body succeeded."""
    with ThreadPoolExecutor(1) as pool:
        hashed = pool.submit(sha256_file, path)
        yield
        hashed.result()


def _identity_of(path: Path) -> _Identity:
    """What identifies this version of the regular file PATH (``_identity`` of its status), read through a
    descriptor opened without following a link."""
    descriptor = open_regular(path)
    try:
        return _identity(os.fstat(descriptor))
    finally:
        os.close(descriptor)


def _known_digest(path: Path, advance: Advance | None = None) -> str:
    """The sha256 of PATH's bytes now: remembered if this version of the file was hashed before (its bytes then
    told to ADVANCE at once), else hashed."""
    identity = _identity_of(path)
    with _VERIFIED_LOCK:
        known = _VERIFIED.get(identity)
    if known is None:
        return sha256_file(path, advance)
    if advance is not None:
        advance(identity[2])
    return known


def verified(generation: Path, manifest: Mapping[str, Any], name: str, advance: Advance | None = None) -> Path:
    """
    GENERATION/NAME, once its bytes have the sha256 that the generation's manifest records for it.

    :param manifest: the generation's manifest as ``Generations.read_manifest`` returned it (its digest record
        checked for shape).
    :param advance: told each count of the file's bytes as it is hashed.
    :raises DocumentStoreError: one line naming the file: not recorded, missing, a link, or other bytes.
    """
    path = generation / name
    expected = (manifest.get(DIGESTS) or {}).get(name)
    if not isinstance(expected, str):
        raise DocumentStoreError(f"{path}: not among the files {generation / 'manifest.json'} records")
    found = _known_digest(path, advance)
    if found != expected:
        raise DocumentStoreError(
            f"{path}: corrupted or changed since it was saved (its sha256 is {found[:16]}..., "
            f"{generation / 'manifest.json'} records {expected[:16]}...)"
        )
    return path


def verify_all(
    generation: Path,
    manifest: Mapping[str, Any],
    names: Iterable[str] | None = None,
    on_progress: DigestProgress | None = None,
) -> None:
    """``verified`` for each of NAMES (default: every file the manifest records), hashed on parallel threads
    (hashlib releases the GIL), so opening a generation costs about its largest file's hashing, not their sum.

    :param on_progress: see the module docstring; the stage is ``CHECKING``, the total the recorded sizes of NAMES.
    :raises DocumentStoreError: for the first file, in the manifest's order, that is not as saved.
    """
    wanted = list((manifest.get(DIGESTS) or {}) if names is None else names)
    sizes = manifest.get("files") or {}
    tally = _Tally(on_progress, CHECKING, sum(size for name in wanted if isinstance(size := sizes.get(name), int)))
    if len(wanted) <= 1:
        for name in wanted:
            verified(generation, manifest, name, tally.advance)
        return
    with ThreadPoolExecutor(max_workers=min(len(wanted), os.cpu_count() or 1, 8)) as pool:
        for future in [pool.submit(verified, generation, manifest, name, tally.advance) for name in wanted]:
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
