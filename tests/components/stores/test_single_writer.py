"""One writer per store directory: a second writer, in this process or another, fails clearly and loses nothing."""

import fcntl
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from haystack.document_stores.errors import DocumentStoreError

from components.stores.directory_lock import (
    LOCK_FILE,
    DirectoryLock,
    DirectoryLockedError,
    locked_by,
    wait_until_unlocked,
)
from tests.support.paths import REPO
from tests.support.stores import KINDS, doc, make_store, search, state

HOLD_LOCK = textwrap.dedent(
    """
    import sys
    from components.stores.directory_lock import DirectoryLock
    lock = DirectoryLock(sys.argv[1], purpose="test writer")
    lock.acquire()
    print("locked", flush=True)
    sys.stdin.readline()
    """
)
# Try to take (and at once drop) the lock RACE_TRIES times in a tight loop; print every refusal's message.
RACE = textwrap.dedent(
    """
    import json, os, sys
    from components.stores.directory_lock import DirectoryLock, DirectoryLockedError
    print(os.getpid(), flush=True)
    sys.stdin.readline()
    won, refusals = 0, []
    for _ in range(int(sys.argv[2])):
        lock = DirectoryLock(sys.argv[1], purpose="racing")
        try:
            lock.acquire()
        except DirectoryLockedError as error:
            refusals.append(str(error))
        else:
            won += 1
            lock.release()
    print(json.dumps({"won": won, "refusals": refusals}), flush=True)
    """
)
RACE_TRIES = 5000
WRITE_ONE = textwrap.dedent(
    """
    import sys
    from tests.support.stores import doc, make_store
    make_store(sys.argv[1], sys.argv[2]).write_documents([doc("other", "a planet from the other process")])
    """
)


@pytest.mark.parametrize("kind", KINDS)
def test_two_store_objects_in_one_process_never_overwrite_each_other(kind: str, tmp_path: Path) -> None:
    """B loaded before A saved: B's write is refused and changes nothing; a reopened store has A's document."""
    path = tmp_path / "store"
    make_store(kind, path).write_documents([doc("first", "first planet")])
    a, b = make_store(kind, path), make_store(kind, path)
    assert a.count_documents() == b.count_documents() == 1
    a.write_documents([doc("from-a", "planet from a")])
    with pytest.raises(
        DocumentStoreError,
        match=r"another writer saved gen-0+2 since this .* read gen-0+1; nothing was changed. Reopen",
    ):
        b.write_documents([doc("from-b", "planet from b")])
    assert set(state(b)) == {"first"}
    reopened = make_store(kind, path)
    assert set(state(reopened)) == {"first", "from-a"}
    reopened.write_documents([doc("from-b", "planet from b")])
    assert set(state(make_store(kind, path))) == {"first", "from-a", "from-b"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_writer_in_another_process_is_detected(kind: str, tmp_path: Path) -> None:
    """A store loaded here, then written by another process: writing here is refused, the other's document kept."""
    path = tmp_path / "store"
    here = make_store(kind, path)
    here.write_documents([doc("mine", "my planet")])
    subprocess.run([sys.executable, "-c", WRITE_ONE, kind, str(path)], cwd=REPO, check=True, timeout=120)
    with pytest.raises(DocumentStoreError, match="another writer saved"):
        here.delete_documents(["mine"])
    assert set(state(make_store(kind, path))) == {"mine", "other"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_locked_directory_refuses_writes_naming_the_holder_but_not_reads(kind: str, tmp_path: Path) -> None:
    """While another process holds the lock, a write fails at once naming its pid; reads work; then writes work."""
    path = tmp_path / "store"
    store = make_store(kind, path)
    store.write_documents([doc("mine", "my planet")])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(DirectoryLockedError, match=rf"locked by another writer \(pid {holder.pid} .*test writer"):
            store.write_documents([doc("late", "late planet")])
        assert set(state(store)) == {"mine"}
        assert search(make_store(kind, path)) == search(store)
    finally:
        holder.communicate("\n", timeout=60)
    assert store.write_documents([doc("late", "late planet")]) == 1


def test_a_writer_that_loses_a_simultaneous_start_always_names_the_holder(tmp_path: Path) -> None:
    """Two processes take and drop one lock in a tight loop: every refusal names the other one's pid.

    The holder's record is written under the same guard as the lock is taken, so a loser never reads an empty
    record (the holder between locking and writing) nor a stale one (its own, left from its last turn).
    """
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(tmp_path), str(RACE_TRIES)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    pids = [int(racer.stdout.readline()) for racer in racers]  # type: ignore[union-attr]
    for racer in racers:
        racer.stdin.write("go\n")  # type: ignore[union-attr]
        racer.stdin.flush()  # type: ignore[union-attr]
    results = [json.loads(racer.communicate(timeout=120)[0]) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0]
    refusals = [(pids[1 - i], message) for i, result in enumerate(results) for message in result["refusals"]]
    assert len(refusals) >= 10, f"the two processes hardly ever collided: {[r['won'] for r in results]} wins"
    wrong = [message for other, message in refusals if f"locked by another writer (pid {other} on " not in message]
    assert not wrong, f"{len(wrong)} of {len(refusals)} refusals did not name the holder, e.g. {wrong[:3]}"


def test_wait_until_unlocked_names_the_holder_once_and_returns_when_it_is_gone(tmp_path: Path) -> None:
    """A waiter is told who holds the lock (once), returns when the holder lets go; a free lock returns at once."""
    assert locked_by(tmp_path) is None
    assert wait_until_unlocked(tmp_path, notice=lambda holder: pytest.fail(f"nobody holds it, yet: {holder}")) is False
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    letting_go = threading.Timer(0.5, holder.communicate, args=("\n",))  # the holder lets go while we wait
    try:
        assert holder.stdout.readline().strip() == "locked"  # type: ignore[union-attr]
        assert (locked_by(tmp_path) or "").startswith(f"pid {holder.pid} on ")
        notices: list[str] = []
        with pytest.raises(TimeoutError, match=f"still locked by pid {holder.pid} "):
            wait_until_unlocked(tmp_path, notices.append, poll_seconds=0.05, timeout=0.3)
        assert len(notices) == 1, notices
        assert notices[0].startswith(f"pid {holder.pid} on "), notices
        letting_go.start()
        assert wait_until_unlocked(tmp_path, notices.append, poll_seconds=0.05, timeout=60) is True
        assert len(notices) == 2, notices
    finally:
        if letting_go.ident is not None:
            letting_go.join(timeout=60)
        holder.kill()
        holder.wait(timeout=60)
    assert locked_by(tmp_path) is None
    with DirectoryLock(tmp_path):  # looking never kept the lock
        pass


def test_a_lock_record_nested_too_deeply_still_names_a_holder(tmp_path: Path) -> None:
    """A lock file someone filled with 3,000 nested brackets: the next writer is told of an unrecorded holder
    (before: a RecursionError from the JSON parser)."""
    tmp_path.joinpath(LOCK_FILE).write_text("[" * 3_000)
    with open(tmp_path / LOCK_FILE, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert locked_by(tmp_path) == "a process that did not record itself (an older needle?)"
