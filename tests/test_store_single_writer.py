"""One writer per store directory: a second writer, in this process or another, fails clearly and loses nothing."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from haystack.document_stores.errors import DocumentStoreError
from test_store_helpers import KINDS, doc, make_store, search, state

from components.stores.directory_lock import DirectoryLockedError

REPO = Path(__file__).resolve().parent.parent
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
WRITE_ONE = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, "tests")
    from test_store_helpers import doc, make_store
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
