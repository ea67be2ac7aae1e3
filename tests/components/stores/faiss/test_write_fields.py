"""``write_fields`` (documents given as their fields, no Document built) stores what ``write_embeddings`` stores for
the same documents: the same table rows byte for byte, the same vectors, so every read answers the same; and it is
as strict: a repeated id, a value that cannot be stored or a bad row writes nothing and names the document."""

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError

from components.stores.faiss.document_store import FAISSDocumentStore
from tests.support.integrity import live

DIM = 8
NAMES = ("fields", "documents")
FIELDS: list[tuple[str, str | None, dict[str, Any]]] = [
    ("a", "plain text", {"title": "T", "corpus_line": 1}),
    ("b", 'accents é ü, CJK 漢字, emoji 🙂, quote " and \\ backslash\nnewline', {"nested": {"x": [1, 2.5, None]}}),
    ("c", None, {}),
    ("d", "", {"flag": True, "big": 10**30, "unicode key é": "v"}),
]


def rows(store_path: Path) -> list[tuple[Any, ...]]:
    """Every row of the live generation's document table, as SQLite holds it."""
    with sqlite3.connect(live(store_path) / "documents.sqlite") as db:
        return db.execute("SELECT * FROM documents ORDER BY row").fetchall()


def vectors(count: int) -> np.ndarray:
    return np.random.default_rng(5).standard_normal((count, DIM)).astype(np.float32)


@pytest.mark.parametrize("factory", ["Flat", "HNSW8"])
def test_the_rows_and_answers_are_those_of_write_embeddings(tmp_path: Path, factory: str) -> None:
    matrix = vectors(len(FIELDS))
    documents = [Document(id=i, content=c, meta=m) for i, c, m in FIELDS]
    by_documents = FAISSDocumentStore(path=str(tmp_path / "documents"), index_factory=factory)
    assert by_documents.write_embeddings(documents, matrix) == len(FIELDS)
    by_fields = FAISSDocumentStore(path=str(tmp_path / "fields"), index_factory=factory)
    ids, contents, metas = (list(column) for column in zip(*FIELDS, strict=True))
    assert by_fields.write_fields(ids, contents, metas, matrix) == len(FIELDS)
    assert rows(tmp_path / "fields") == rows(tmp_path / "documents")
    fields, documents_too = (FAISSDocumentStore(path=str(tmp_path / name), index_factory=factory) for name in NAMES)
    assert fields.filter_documents() == documents_too.filter_documents()
    query = vectors(2)
    assert fields.search(query, top_k=3) == documents_too.search(query, top_k=3)


def test_a_store_built_in_place_holds_the_written_documents(tmp_path: Path) -> None:
    """As ``needle index`` builds: autosave off, the table built in the store's directory, saved once."""
    store = FAISSDocumentStore(path=str(tmp_path), autosave=False)
    store.write_in_place()
    matrix = vectors(6)
    store.write_fields(["x0", "x1", "x2"], ["p", "q", "r"], [{}, {}, {}], matrix[:3])
    store.write_fields(["x3", "x4", "x5"], ["s", "t", "u"], [{}, {}, {}], matrix[3:])
    store.save()
    found = FAISSDocumentStore(path=str(tmp_path)).filter_documents()
    assert [(d.id, d.content) for d in found] == list(zip([f"x{i}" for i in range(6)], "pqrstu", strict=True))
    assert np.array_equal(np.array([d.embedding for d in found], dtype=np.float32), matrix)


@pytest.mark.parametrize(
    ("ids", "repeated"),
    [(["n1", "old", "n2"], r"'old' \(documents\[1\]\)"), (["n1", "n2", "n1"], r"'n1' \(documents\[2\]\)")],
)
def test_a_repeated_id_writes_nothing_and_names_it(tmp_path: Path, ids: list[str], repeated: str) -> None:
    """One stored already, or given twice in the call."""
    store = FAISSDocumentStore(path=str(tmp_path))
    store.write_fields(["old"], ["kept"], [{}], vectors(1))
    with pytest.raises(DuplicateDocumentError, match=rf"^ID {repeated} already exists"):
        store.write_fields(ids, ["a", "b", "c"], [{}, {}, {}], vectors(3))
    assert [d.id for d in FAISSDocumentStore(path=str(tmp_path)).filter_documents()] == ["old"]
    assert store.count_documents() == 1


@pytest.mark.parametrize(
    ("contents", "metas", "message"),
    [
        (["ok", "bad \ud800"], [{}, {}], r"documents\[1\] \(id 'i1'\) content"),
        (["ok", "ok"], [{}, {"when": object()}], r"documents\[1\] \(id 'i1'\): field 'meta.when' cannot be stored"),
        (["ok", 3], [{}, {}], r"documents\[1\]: field 'content' must be a string or None, got int"),
        (["ok"], [{}, {}], r"contents: 1 values, expected one per document \(2\)"),
    ],
)
def test_what_cannot_be_stored_writes_nothing_and_names_the_document(
    tmp_path: Path, contents: list[Any], metas: list[Any], message: str
) -> None:
    store = FAISSDocumentStore(path=str(tmp_path))
    with pytest.raises(ValueError, match=message):
        store.write_fields(["i0", "i1"], contents, metas, vectors(2))
    assert store.count_documents() == 0
    assert not (tmp_path / "CURRENT").exists()  # nothing was saved


def test_a_row_with_nan_is_refused_naming_it(tmp_path: Path) -> None:
    matrix = vectors(3)
    matrix[2, 4] = np.nan
    store = FAISSDocumentStore(path=str(tmp_path))
    with pytest.raises(ValueError, match=r"^embeddings row 2: embedding holds NaN or infinite values$"):
        store.write_fields(["a", "b", "c"], ["x", "y", "z"], [{}, {}, {}], matrix)
    assert store.count_documents() == 0
