"""One writer per directory: an OS file lock that names its holder and never outlives its process.

``DirectoryLock(directory).acquire()`` takes an exclusive ``flock`` on ``<directory>/LOCK`` without waiting.
The kernel drops the lock when the holding process exits, however it exits (``kill -9`` included), so a
stale lock can never block the next writer; the pid, host, command and start time written into the file
after locking are only there to say *who* holds it. The file itself is never deleted: removing a lock file
while another process waits on it would let two writers in. Readers never take the lock.
"""

import fcntl
import json
import os
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from haystack.document_stores.errors import DocumentStoreError

LOCK_FILE = "LOCK"


class DirectoryLockedError(DocumentStoreError):
    """Another writer holds the directory's lock; the message names it (pid, host, command, since when)."""


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
        """Take the lock now or raise DirectoryLockedError naming the holder; never waits."""
        if self._fd is not None:
            self._depth += 1
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise DirectoryLockedError(
                f"{self.directory} is locked by another writer ({holder}); wait for it to finish or stop it"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._depth = fd, 1
        self._record_holder()

    def release(self) -> None:
        """Give the lock up (after as many releases as acquires); the kernel also does this at process exit."""
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth == 0:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock

    def _record_holder(self) -> None:
        """Write who holds the lock into the lock file, for the message another writer gets."""
        assert self._fd is not None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "purpose": self.purpose,
            "command": " ".join(sys.argv)[:300],
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, json.dumps(holder).encode("utf-8"), 0)

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


def _read_holder(fd: int) -> str:
    """Describe the holder recorded in the lock file, or say that it has not written itself in yet."""
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return (
            f"pid {holder['pid']} on {holder['host']}, {holder['purpose']} since {holder['since']}: {holder['command']}"
        )
    except (ValueError, KeyError, TypeError):
        return "holder not recorded yet"
