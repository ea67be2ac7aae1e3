"""A failed write, delete or update leaves either store exactly as it was, in memory and on disk; later writes work."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError
from haystack.document_stores.types import DuplicatePolicy

from tests.support.stores import KINDS, doc, file_size_limit, fingerprint, make_store, search, state

DOCS = [
    doc("sun", "the sun is a star", kind="star"),
    doc("mars", "mars is a red planet", kind="planet"),
    doc("venus", "venus is a hot planet", kind="planet"),
]
FULL_DISK = (OSError, DocumentStoreError)  # EFBIG as is, or named with the file the store was writing
BIG = "planet " * 40_000  # a document whose saved files outgrow the file size limit below


def _bad_writes() -> dict[str, tuple[Callable[[Any], Any], Any, str | None]]:
    """Each failing call, the exception it raises and what its message names."""
    return {
        "surrogate content": (
            lambda s: s.write_documents([doc("ok", "fine"), Document(id="bad", content="a\ud800b")]),
            ValueError,
            r"documents\[1\] \(id 'bad'\) content is not valid Unicode",
        ),
        "surrogate meta": (
            lambda s: s.write_documents([doc("bad", "planet", note="x\udfffy")]),
            ValueError,
            r"documents\[0\] \(id 'bad'\) meta.note is not valid Unicode",
        ),
        "unserializable meta": (
            lambda s: s.write_documents([doc("bad", "planet", when=object())]),
            ValueError,
            r"documents\[0\] \(id 'bad'\): field 'meta.when' cannot be stored",
        ),
        "unserializable embedding": (
            lambda s: s.write_documents(
                [doc("ok", "fine"), Document(id="bad", content="planet", embedding=[object()])]
            ),
            ValueError,
            r"documents\[1\].*embedding",
        ),
        "duplicate": (
            lambda s: s.write_documents([doc("new", "planet"), doc("mars", "planet")]),
            Exception,
            r"ID 'mars' \(documents\[1\]\) already exists",
        ),
        "update surrogate": (
            lambda s: s.update_by_filter(
                {"field": "meta.kind", "operator": "==", "value": "planet"}, {"note": "\ud800"}
            ),
            ValueError,
            "meta is not valid Unicode",
        ),
        "disk full on write": (lambda s: _limited(s.write_documents, [doc("big", BIG)]), FULL_DISK, None),
        "disk full on delete": (lambda s: _limited(s.delete_documents, ["mars"]), FULL_DISK, None),
        "disk full on update": (
            lambda s: _limited(
                s.update_by_filter, {"field": "meta.kind", "operator": "==", "value": "star"}, {"big": BIG}
            ),
            FULL_DISK,
            None,
        ),
    }


def _limited(call: Callable[..., Any], *args: Any) -> Any:
    """Run ``call`` with every file write beyond 64 KiB failing, as on a full disk."""
    with file_size_limit(64 * 1024):
        return call(*args)


@pytest.mark.parametrize("case", list(_bad_writes()))
@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_mutation_changes_nothing_and_the_next_write_works(kind: str, case: str, tmp_path: Path) -> None:
    """Same documents, search results and saved files after the failure; a valid write then succeeds and saves."""
    path = tmp_path / "store"
    store = make_store(kind, path)
    store.write_documents(DOCS)
    before, hits, files = state(store), search(store), fingerprint(path)
    call, error, message = _bad_writes()[case]
    if case.startswith("disk full on delete"):
        store.write_documents([doc("big", BIG)])  # so that the save after the delete outgrows the limit too
        before, hits, files = state(store), search(store), fingerprint(path)
    with pytest.raises(error, match=message):
        call(store)
    assert (state(store), search(store), store.count_documents()) == (before, hits, len(before))
    assert fingerprint(path) == files
    assert state(make_store(kind, path)) == before
    assert store.write_documents([doc("earth", "earth is a blue planet")]) == 1
    assert state(make_store(kind, path)) == {**before, "earth": ("earth is a blue planet", {})}


@pytest.mark.parametrize("kind", KINDS)
def test_an_in_memory_store_refuses_bad_documents_before_changing_anything(kind: str) -> None:
    """Without a path there is nothing to restore from: the checks come first, so nothing changes either."""
    store = make_store(kind, None)
    store.write_documents(DOCS)
    before = state(store)
    for case in ("surrogate content", "surrogate meta", "unserializable meta", "duplicate", "update surrogate"):
        call, error, message = _bad_writes()[case]
        with pytest.raises(error, match=message):
            call(store)
        assert state(store) == before
    assert store.write_documents([doc("mars", "mars red")], policy=DuplicatePolicy.OVERWRITE) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_documents_read_back_are_copies(kind: str) -> None:
    """Changing a document returned by the store, or the one written, does not change the store."""
    store = make_store(kind, None)
    written = doc("a", "planet", tag="x")
    store.write_documents([written])
    written.meta["tag"] = "changed by caller"
    store.filter_documents()[0].meta["tag"] = "changed by reader"
    assert store.filter_documents()[0].meta == {"tag": "x"}
