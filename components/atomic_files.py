"""Replace a file crash-safely: the one way every writer of components/ and needle_retrieval/ puts a file in place.

The new bytes go to a temporary sibling (``temp_sibling``: the same directory, so the rename never crosses a file
system; a hidden name unique to this process and call, so two writers never share one), which is fsynced and
renamed over the target (``os.replace``, atomic on POSIX); then the directory is fsynced, so that the rename
itself survives a power cut (``publish``). A process killed at any point leaves the old file or the new one,
never a mix; at worst a leftover temporary file, which ``temp_pattern`` recognises.

Such leftovers do not pile up: once the new file is in place, ``publish`` removes the temporary siblings of the
same target whose writer is provably gone (``remove_orphaned_temps``: the pid in the name is no process on this
machine), so the next successful write of a target cleans what a killed one left. A live writer's file (another
process writing the same target at the same time) and this process's own are kept, and nothing else in the
directory is looked at; failing to remove one (a read-only directory, a file gone meanwhile) never fails the write.

``atomic_write`` is the whole sequence for a writer that produces the bytes in one call; a writer that streams
into its own temporary file (``components.embedders.embedding_file_stream``) takes ``temp_sibling``,
``sync_file`` and ``publish`` for its end of the write, as the generations' pointer switch
(``components.stores.crash_safe_generations``) does.
"""

import contextlib
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
    """Rename TMP (written and fsynced) over PATH and fsync the directory, so the rename survives a crash; then
    remove the temporary siblings of PATH that killed writers left (``remove_orphaned_temps``)."""
    os.replace(tmp, path)
    fsync_directory(path.parent)
    remove_orphaned_temps(path)


def remove_orphaned_temps(path: Path) -> None:
    """Remove the temporary siblings of PATH (``temp_pattern``, exactly) whose writing process no longer exists.

    Only after PATH's replacement is in place (``publish``), so nothing is lost before the new file is whole. A
    pid that exists (any process, even one we may not signal) keeps its file: it may be a live writer, and a
    reused pid costs nothing but a file kept one more time. The removal is not fsynced: one that a crash undoes
    is done again by the next write. Errors are ignored, as the write itself has succeeded.
    """
    if os.name != "posix":
        return  # os.kill(pid, 0) would terminate the process on Windows instead of probing it
    pattern = re.compile(temp_pattern(path.name))
    try:
        with os.scandir(path.parent) as entries:
            names = [entry.name for entry in entries]
    except OSError:
        return
    for name in names:
        if pattern.fullmatch(name) and _writer_gone(int(name.rsplit(".", 3)[1])):
            with contextlib.suppress(OSError):  # gone meanwhile, a directory of that name, a read-only directory
                os.unlink(path.parent / name)


def _writer_gone(pid: int) -> bool:
    """Whether no process PID exists on this machine (never true of this process, whose other writes may be under
    way)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # PermissionError: it exists, another user's; OverflowError: cannot be probed
        return False
    return False


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
