"""One writer per directory: an OS file lock that names its holder and never outlives its process.

``DirectoryLock(directory).acquire()`` takes an exclusive ``flock`` on ``<directory>/LOCK`` without waiting.
The kernel drops the lock when the holding process exits, however it exits (``kill -9`` included), so a
stale lock can never block the next writer; the pid, host, command and start time written into the file
are only there to say *who* holds it. The file itself is never deleted: removing a lock file while another
process waits on it would let two writers in. Readers never take the lock.

Taking the lock and writing the holder's record are one step for every other writer: both happen under a
second, brief ``flock`` on the directory itself (the *record guard*), and a writer that finds the lock taken
reads the record under that guard too. So a losing writer always reads the record of the process that holds
the lock now, never an empty file (the holder between locking and writing) nor the record of the previous
holder (which stays in the file after it released). The guard is held for a ``flock`` and a small write, and
is dropped by the kernel with its process like the lock itself; it is the only wait in ``acquire``.
"""

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from haystack.document_stores.errors import DocumentStoreError

LOCK_FILE = "LOCK"
POLL_SECONDS = 0.2  # how often wait_until_unlocked looks again


class DirectoryLockedError(DocumentStoreError):
    """Another writer holds the directory's lock; the message names it (pid, host, command, since when)."""

    def __init__(self, message: str, directory: Path, holder: str) -> None:
        """
        :param message: The whole message.
        :param directory: The locked directory.
        :param holder: Who holds the lock (``pid N on HOST, PURPOSE since TIME: COMMAND``), for a caller that waits.
        """
        super().__init__(message)
        self.directory = directory
        self.holder = holder


class DirectoryLock:
    """An exclusive, non-blocking writer lock on a directory (created if missing); re-entrant per object."""

    def __init__(self, directory: Path, purpose: str = "writing") -> None:
        """
        :param directory: The directory to lock; ``<directory>/LOCK`` holds the lock.
        :param purpose: What the holder is doing, recorded for the error message of the next writer.
        """
        self.directory = Path(directory)
        self.purpose = purpose
        self._fd: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        """Take the lock now or raise DirectoryLockedError naming the holder; never waits for the holder."""
        if self._fd is not None:
            self._depth += 1
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _take(fd, self.directory, self.purpose)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._depth = fd, 1

    def release(self) -> None:
        """Give the lock up (after as many releases as acquires); the kernel also does this at process exit."""
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth == 0:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> "DirectoryLock":
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()

    def __del__(self) -> None:
        """Close the descriptor of a lock object dropped while held."""
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)  # type: ignore[arg-type]


def locked_by(directory: Path) -> str | None:
    """Who holds DIRECTORY's writer lock right now (as DirectoryLockedError.holder says it), or None when nobody.

    Looks without taking the lock, so a writer starting meanwhile is never refused because of the look.
    """
    directory = Path(directory)
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return None  # never locked: no directory or no lock file yet
    try:
        with _record_guard(directory):
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # fails exactly while a writer holds LOCK_EX
            except BlockingIOError:
                return _read_holder(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)  # under the guard: no writer may find this look's lock
            return None
    finally:
        os.close(fd)


def wait_until_unlocked(
    directory: Path, notice: Callable[[str], None], poll_seconds: float = POLL_SECONDS, timeout: float | None = None
) -> bool:
    """Wait while a writer holds DIRECTORY's lock, calling NOTICE with each new holder; True when it waited.

    Returns as soon as nobody holds it; the caller then takes it (or reads what the writer wrote) itself, and
    must expect to lose it to another writer that starts in between.

    :raises TimeoutError: TIMEOUT seconds passed and a writer still holds it (None: wait as long as it takes).
    """
    end = None if timeout is None else time.monotonic() + timeout
    announced: str | None = None
    while (holder := locked_by(directory)) is not None:
        if holder != announced:
            notice(holder)
            announced = holder
        if end is not None and time.monotonic() >= end:
            raise TimeoutError(f"{directory} is still locked by {holder}")
        time.sleep(poll_seconds)
    return announced is not None


@contextlib.contextmanager
def _record_guard(directory: Path) -> Iterator[None]:
    """Hold the record guard of DIRECTORY (an flock on the directory itself) for taking or inspecting the lock."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _take(fd: int, directory: Path, purpose: str) -> None:
    """Lock FD (the lock file of DIRECTORY) and record PURPOSE, as one step under the guard; undone on failure."""
    with _record_guard(directory):
        _lock_or_name_holder(fd, directory)
        try:
            _record_holder(fd, purpose)
        except BaseException:
            fcntl.flock(fd, fcntl.LOCK_UN)  # under the guard: nobody saw a holder without its record
            raise


def _lock_or_name_holder(fd: int, directory: Path) -> None:
    """Take the exclusive lock on FD now, or raise DirectoryLockedError naming the holder (under the guard)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(fd)
        raise DirectoryLockedError(
            f"{directory} is locked by another writer ({holder}); wait for it to finish or stop it",
            directory,
            holder,
        ) from None


def _record_holder(fd: int, purpose: str) -> None:
    """Write who holds the lock into the lock file (under the guard), for the message another writer gets."""
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "purpose": purpose,
        "command": " ".join(sys.argv)[:300],
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder).encode("utf-8"), 0)


def _read_holder(fd: int) -> str:
    """Describe the holder recorded in the lock file (read under the guard, so it is the current holder's).

    An unreadable record can only come from a holder that does not take the guard (an older needle); the
    message says so rather than naming nobody.
    """
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return (
            f"pid {holder['pid']} on {holder['host']}, {holder['purpose']} since {holder['since']}: {holder['command']}"
        )
    except (ValueError, KeyError, TypeError, RecursionError):
        return "a process that did not record itself (an older needle?)"
