"""Documents page by page (components/stores/document_pages.py) from the BM25, FAISS and Milvus stores.

Property: for random documents, filters and page sizes, the pages put end to end are ``filter_documents``' answer
(same ids, same order, same contents and meta), no page is empty or larger than asked, and every
``filter_documents_page(offset, limit)`` is the same slice of it; in memory and saved then reopened. Then what a
user walking a live store sees: documents deleted mid-walk are skipped, a write mid-walk is not blocked, a page
holds copies, and bad arguments are refused naming them.
"""

import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from haystack.errors import FilterError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.stores.milvus import MilvusDocumentStore
from tests.support.stores import KINDS, doc, make_store

TAG_X = {"field": "meta.tag", "operator": "==", "value": "x"}
N_OVER_3 = {"field": "meta.n", "operator": ">", "value": 3}
FILTERS = st.sampled_from([None, {}, TAG_X, N_OVER_3])
TAGS = st.lists(st.sampled_from(["x", "y"]), max_size=25)


def _documents(tags: list[str]) -> list[Document]:
    return [doc(f"d{i}", f"planet number {i} is {tag}", tag=tag, n=i % 7) for i, tag in enumerate(tags)]


def _seen(documents: list[Document]) -> list[tuple[str, str | None, dict[str, Any]]]:
    return [(d.id, d.content, d.meta) for d in documents]


def _store(kind: str, saved: bool, directory: Path, documents: list[Document]) -> Any:
    """A store holding DOCUMENTS: in memory, or saved and reopened (what `needle search` reads)."""
    store = make_store(kind, directory / "s" if saved else None)
    if documents:
        store.write_documents(documents)
    if not saved:
        return store
    store.save()
    return make_store(kind, directory / "s")


@pytest.mark.parametrize("saved", [False, True], ids=["memory", "saved"])
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tags=TAGS, filters=FILTERS, page_size=st.integers(1, 7), offset=st.integers(0, 30), limit=st.integers(1, 9))
def test_pages_end_to_end_are_filter_documents(
    kind: str, saved: bool, tags: list[str], filters: Any, page_size: int, offset: int, limit: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = _store(kind, saved, Path(directory), _documents(tags))
        everything = store.filter_documents(filters)
        pages = list(store.iter_document_pages(filters, page_size=page_size))
        assert all(1 <= len(page) <= page_size for page in pages)
        assert all(len(page) == page_size for page in pages[:-1])
        assert _seen([d for page in pages for d in page]) == _seen(everything)
        assert _seen(store.filter_documents_page(filters, offset=offset, limit=limit)) == _seen(
            everything[offset : offset + limit]
        )


@pytest.mark.parametrize("kind", KINDS)
def test_a_walk_skips_what_is_deleted_meanwhile_and_never_blocks_a_writer(kind: str, tmp_path: Path) -> None:
    store = _store(kind, True, tmp_path, _documents(["x"] * 30))
    pages = store.iter_document_pages(page_size=10)
    first = next(pages)
    writer = threading.Thread(
        target=lambda: (store.delete_documents(["d15", "d25"]), store.write_documents([doc("new", "planet new")]))
    )
    writer.start()
    writer.join(timeout=60)
    assert not writer.is_alive(), "a write waited on a walk between its pages"
    rest = [d.id for page in pages for d in page]
    assert [d.id for d in first] == [f"d{i}" for i in range(10)]
    assert rest == [f"d{i}" for i in range(10, 30) if i not in (15, 25)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_holds_copies(kind: str) -> None:
    store = _store(kind, False, Path("."), _documents(["x", "y"]))
    page = store.filter_documents_page(limit=2)
    page[0].meta["tag"] = "changed"
    assert store.filter_documents()[0].meta["tag"] == "x"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.iter_document_pages(page_size=0), "page_size"),
        (lambda s: s.iter_document_pages(page_size=100_001), "page_size"),
        (lambda s: s.iter_document_pages(page_size="10"), "page_size"),
        (lambda s: s.iter_document_pages(page_size=True), "page_size"),
        (lambda s: s.filter_documents_page(offset=-1), "offset"),
        (lambda s: s.filter_documents_page(limit=0), "limit"),
        (lambda s: s.filter_documents_page(limit=1.5), "limit"),
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_bad_arguments_are_refused_naming_them(kind: str, call: Any, message: str) -> None:
    store = _store(kind, False, Path("."), _documents(["x"]))
    with pytest.raises(ValueError, match=message):
        call(store)


@pytest.mark.parametrize("kind", KINDS)
def test_a_malformed_filter_is_the_stores_filter_error(kind: str) -> None:
    store = _store(kind, False, Path("."), _documents(["x"]))
    with pytest.raises(FilterError):
        store.iter_document_pages({"field": "meta.tag", "operator": "~=", "value": "x"})


def test_milvus_pages_are_filter_documents(tmp_path: Path) -> None:
    store = MilvusDocumentStore(uri=str(tmp_path / "m.db"), collection_name="pages")
    store.write_documents(_documents(["x", "y", "x"] * 9))
    for filters in (None, TAG_X, N_OVER_3):
        everything = sorted(_seen(store.filter_documents(filters)))
        pages = list(store.iter_document_pages(filters, page_size=4))
        assert all(1 <= len(page) <= 4 for page in pages)
        assert sorted(_seen([d for page in pages for d in page])) == everything
    by_position = [d for offset in range(0, 27, 5) for d in store.filter_documents_page(offset=offset, limit=5)]
    assert sorted(_seen(by_position)) == sorted(_seen(store.filter_documents()))
    assert store.filter_documents_page(offset=27, limit=5) == []
    big = list(store.iter_document_pages(page_size=100_000))  # Milvus reads at most 16,384 rows per batch
    assert [len(page) for page in big] == [27]
    assert len(store.filter_documents_page(offset=20_000, limit=50_000)) == 0
