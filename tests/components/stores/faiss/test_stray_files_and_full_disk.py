"""A saved FAISS store beside files SQLite would act on, and a full disk while FAISS writes its index: the store
opens as saved, or a save fails in one line naming the file and the system's reason, the saved store unchanged."""

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores import FAISSDocumentStore
from tests.support.integrity import live
from tests.support.stores import file_size_limit

DOCS = [Document(id=f"d{i}", content=f"passage {i}", embedding=[float(i), 1.0, 0.0, 0.0]) for i in range(50)]


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A saved FAISS store of 50 documents."""
    path = tmp_path / "dense"
    FAISSDocumentStore(path=str(path), embedding_dim=4).write_documents(DOCS)
    return path


def hot_journal(database: Path, work: Path) -> bytes:
    """The journal SQLite leaves when a writer of a copy of DATABASE dies inside a transaction (a hot journal,
    which the next reader of that database must roll back)."""
    copy = work / "copy.sqlite"
    shutil.copy(database, copy)
    writer = f"""
        import os, sqlite3
        db = sqlite3.connect({str(copy)!r}, isolation_level=None)
        db.execute("PRAGMA cache_size = 1")  # the change spills into the file, its old pages into the journal
        db.execute("BEGIN")
        db.execute("UPDATE documents SET document = document || hex(randomblob(2000))")
        os._exit(0)
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(writer)], check=True)
    journal = copy.with_name("copy.sqlite-journal").read_bytes()
    assert journal
    assert sqlite3.connect(copy).execute("SELECT count(*) FROM documents").fetchone() == (50,)  # rolled back
    return journal


@pytest.mark.parametrize("kind", ["hot", "random"])
def test_a_sqlite_journal_planted_beside_a_saved_store_is_ignored(saved: Path, tmp_path: Path, kind: str) -> None:
    """The saved file's bytes are verified by their sha256 and read as they are: no roll back is attempted (which
    failed as "attempt to write a readonly database"), the documents are the saved ones, the journal stays."""
    query = np.array([[3.0, 1.0, 0.0, 0.0]], dtype=np.float32)
    expected = [(d.id, d.score) for d in FAISSDocumentStore(path=str(saved)).search(query, top_k=5)[0]]
    planted = live(saved) / "documents.sqlite-journal"
    content = hot_journal(live(saved) / "documents.sqlite", tmp_path) if kind == "hot" else os.urandom(8192)
    planted.write_bytes(content)
    store = FAISSDocumentStore(path=str(saved))
    assert sorted(store.filter_documents(), key=lambda d: int(d.id[1:])) == DOCS
    assert [(d.id, d.score) for d in store.search(query, top_k=5)[0]] == expected
    assert planted.read_bytes() == content


def test_a_full_disk_while_faiss_writes_its_index_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """FAISS' own error (a RuntimeError naming its C++ source) becomes the store's: the file and the system's words
    (here the file size limit's, "File too large"; on a full disk "No space left on device"); the saved generation
    stays live and whole."""
    path = tmp_path / "hnsw"
    store = FAISSDocumentStore(path=str(path), index_factory="HNSW32", embedding_dim=4)
    store.write_documents(DOCS)
    before = live(path)
    more = [Document(id=f"e{i}", content="e", embedding=[float(i), 2.0, 0.0, 0.0]) for i in range(2000)]
    # The document table (about 60 bytes a row) fits, the HNSW graph (about 300 bytes a vector) does not.
    with file_size_limit(400_000), pytest.raises(DocumentStoreError) as raised:
        store.write_documents(more)
    file = rf"{re.escape(str(path))}/gen-\d+\.partial/vectors\.faiss"
    assert re.fullmatch(rf"{file}: cannot write the FAISS index \(File too large\)", str(raised.value))
    assert live(path) == before
    assert len(FAISSDocumentStore.load(str(path)).filter_documents()) == len(DOCS)
