"""Replace a file crash-safely: the one way every writer of components/ and needle/ puts a file in place.

The new bytes go to a temporary sibling (``temp_sibling``: the same directory, so the rename never crosses a file
system; a hidden name unique to this process and call, so two writers never share one), which is fsynced and
renamed over the target (``os.replace``, atomic on POSIX); then the directory is fsynced, so that the rename
itself survives a power cut (``publish``). A process killed at any point leaves the old file or the new one,
never a mix; at worst a leftover temporary file, which ``temp_pattern`` recognises for a caller that tidies up.

``atomic_write`` is the whole sequence for a writer that produces the bytes in one call; a writer that streams
into its own temporary file (``components.embedders.embedding_file_stream``) takes ``temp_sibling``,
``sync_file`` and ``publish`` for its end of the write.
"""

import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO


def temp_sibling(path: Path) -> Path:
    """A new temporary file name beside PATH: ``.<name>.<pid>.<random hex>.tmp``."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")


def temp_pattern(name: str) -> str:
    """A regular expression matching the names ``temp_sibling`` gives for a target called NAME."""
    return rf"\.{re.escape(name)}\.\d+\.[0-9a-f]{{32}}\.tmp"


def atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Replace PATH with what WRITE writes into a temporary sibling, fsynced, renamed over PATH, the rename fsynced.

    The temporary file is removed when anything fails (WRITE raising, a full disk), and PATH is then unchanged.
    """
    tmp = temp_sibling(path)
    try:
        with tmp.open("wb") as handle:
            write(handle)
            sync_file(handle)
        publish(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """``atomic_write`` of TEXT, encoded as UTF-8."""
    data = text.encode("utf-8")
    atomic_write(path, lambda handle: handle.write(data))


def atomic_copy(source: Path, target: Path) -> None:
    """Replace TARGET with a copy of SOURCE's bytes (``atomic_write``)."""
    with source.open("rb") as original:
        atomic_write(target, lambda handle: _copy(original, handle))


def _copy(source: IO[bytes], target: IO[bytes]) -> None:
    """Copy every byte of SOURCE into TARGET, a megabyte at a time."""
    while chunk := source.read(1 << 20):
        target.write(chunk)


def sync_file(handle: IO[bytes]) -> None:
    """Flush HANDLE's buffered bytes and fsync them, before its file is renamed into place."""
    handle.flush()
    os.fsync(handle.fileno())


def publish(tmp: Path, path: Path) -> None:
    """Rename TMP (written and fsynced) over PATH and fsync the directory, so the rename survives a crash."""
    os.replace(tmp, path)
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Persist a rename or removal in DIRECTORY on POSIX; directories cannot be opened for fsync on Windows, which
    is fine to skip."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
