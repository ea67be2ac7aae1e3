"""Saving and loading the BM25 store: memory-mapped loads, crash-safe saves, clear errors on damaged files."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.recent_documents import RecentDocuments
from tests.support.integrity import reseal
from tests.support.paths import REPO

DOCS = [
    Document(id="sun", content="The sun is a star at the centre of the solar system", meta={"kind": "star"}),
    Document(id="moon", content="The moon orbits the earth and causes the tides", meta={"kind": "satellite"}),
    Document(id="mars", content="Mars is a red planet with two small moons", meta={"kind": "planet"}),
]


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A directory holding a saved three-document index."""
    path = tmp_path / "bm25"
    BM25DocumentStore(path=str(path)).write_documents(DOCS)
    return path


def generation(path: Path) -> Path:
    """The live generation directory of a saved store."""
    return path / (path / "CURRENT").read_text().strip()


def test_a_loaded_store_has_the_same_documents_and_scores_and_arrays_of_its_own(saved: Path) -> None:
    """Reloading gives equal documents and identical scores; the bm25s arrays are read into read-only memory of the
    store's own, not mapped (a file changed later cannot reach them: test_files_changed_underneath.py)."""
    before = BM25DocumentStore(path=str(saved), autosave=False)
    expected = [(d.id, d.score) for d in before.bm25_retrieval("moons of the red planet")]
    loaded = BM25DocumentStore(path=str(saved))
    assert loaded.filter_documents() == DOCS
    assert [(d.id, d.score) for d in loaded.bm25_retrieval("moons of the red planet")] == expected
    data = loaded._ready().snapshot().main.bm25.scores["data"]
    assert not isinstance(data, np.memmap)
    assert not data.flags.writeable
    assert loaded.index_builds == 0


def test_save_without_a_path_is_refused() -> None:
    """An in-memory store needs a path to save to."""
    with pytest.raises(ValueError, match="save needs a path"):
        BM25DocumentStore().save()


def test_tokenizer_and_bm25_settings_travel_with_the_index(tmp_path: Path) -> None:
    """A zh index reloads as zh without saying so; contradicting it explicitly is an error naming the manifest."""
    path = str(tmp_path / "zh")
    BM25DocumentStore(path=path, lang="zh", k1=1.2).write_documents(
        [Document(id="1", content="大熊猫主要吃竹子"), Document(id="2", content="长城是古代的防御工程")]
    )
    loaded = BM25DocumentStore(path=path)
    assert loaded.settings["lang"] == "zh"
    assert loaded.settings["k1"] == 1.2
    assert [d.id for d in loaded.bm25_retrieval("熊猫吃什么")] == ["1"]
    contradiction = r"lang='en' contradicts the index saved in .*manifest.json, built with lang='zh'"
    with pytest.raises(ValueError, match=contradiction):
        BM25DocumentStore(path=path, lang="en").count_documents()
    with pytest.raises(ValueError, match=r"k1=0\.9 contradicts"):
        BM25DocumentStore(path=path, k1=0.9).count_documents()


def test_an_empty_store_saves_and_loads(tmp_path: Path) -> None:
    """Saving no documents is valid and loads as an empty, writable store."""
    path = str(tmp_path / "empty")
    BM25DocumentStore(path=path).save()
    store = BM25DocumentStore(path=path)
    assert store.count_documents() == 0
    assert store.bm25_retrieval("anything") == []


def test_terms_of_a_document_written_then_deleted_do_not_break_the_saved_index(tmp_path: Path) -> None:
    """New terms enter the vocabulary on write; deleting the document before saving leaves a loadable index."""
    store = BM25DocumentStore(path=str(tmp_path / "bm25"), autosave=False)
    store.write_documents(DOCS)
    assert store.bm25_retrieval("red planet")
    store.write_documents([Document(id="pluto", content="Pluto dwarf kuiper")])
    store.delete_documents(["pluto"])
    store.save()
    assert [d.id for d in BM25DocumentStore(path=str(tmp_path / "bm25")).bm25_retrieval("red planet")] == ["mars"]


def test_a_second_save_replaces_the_generation_and_leaves_no_partial(saved: Path) -> None:
    """Each save is a new generation; older ones and leftovers are removed."""
    (saved / "gen-000099.partial").mkdir()
    store = BM25DocumentStore(path=str(saved))
    store.write_documents([Document(id="venus", content="Venus is the hottest planet")])
    assert sorted(p.name for p in saved.iterdir()) == ["CURRENT", "LOCK", "gen-000100"]
    assert BM25DocumentStore(path=str(saved)).count_documents() == 4


CHILD = textwrap.dedent(
    """
    import sys
    from haystack import Document
    from components.stores.bm25.document_store import BM25DocumentStore

    store = BM25DocumentStore(path=sys.argv[1], autosave=False)
    store.write_documents([Document(id=f"d{i}", content=f"base document {i} " + "filler text " * 40)
                           for i in range(5000)])
    store.save()
    print("saved", flush=True)
    k = 0
    while True:
        store.write_documents([Document(id=f"v{k}", content=f"version marker{k}")])
        store.save()
        k += 1
    """
)


def test_a_save_killed_midway_leaves_the_previous_generation_loadable(tmp_path: Path) -> None:
    """SIGKILL while a save is writing its generation: the index still loads, complete, from CURRENT."""
    path = tmp_path / "bm25"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "saved"
        _stop_during_a_save(child, path)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        child.kill()
    partials = [p for p in path.iterdir() if p.name.endswith(".partial")]
    assert partials, "the child was not stopped inside a save"
    store = BM25DocumentStore(path=str(path), autosave=False)
    manifest = json.loads((generation(path) / "manifest.json").read_text())
    assert store.count_documents() == manifest["documents"] >= 5000
    assert [d.id for d in store.bm25_retrieval("base document 17", top_k=1)] == ["d17"]


def _stop_during_a_save(child: subprocess.Popen, path: Path) -> None:
    """SIGSTOP the child at a moment when a ``.partial`` generation exists (retrying if it just finished)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if any(p.name.endswith(".partial") for p in path.iterdir()):
            child.send_signal(signal.SIGSTOP)
            if any(p.name.endswith(".partial") for p in path.iterdir()):
                return
            child.send_signal(signal.SIGCONT)
        time.sleep(0.001)
    raise AssertionError("no save in progress seen within 120 s")


def _damage_size(path: Path) -> None:
    """Truncate a file by one byte."""
    data = path.read_bytes()
    path.write_bytes(data[:-1])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            lambda p: (generation(p) / "data.csc.index.npy").unlink(),
            r"data\.csc\.index\.npy: missing \(listed in .*manifest\.json\)",
        ),
        (
            lambda p: _damage_size(generation(p) / "indices.csc.index.npy"),
            r"indices\.csc\.index\.npy: corrupted, \d+ bytes where",
        ),
        (lambda p: (generation(p) / "manifest.json").write_text("{not json"), r"manifest\.json: corrupted JSON"),
        (lambda p: (p / "CURRENT").write_text("gen-000042\n"), r"gen-000042: missing, although .*CURRENT names it"),
        (lambda p: (p / "CURRENT").write_text("garbage\n"), r"CURRENT: corrupted, expected a generation name"),
        (
            lambda p: (p / "CURRENT").unlink(),
            r"CURRENT: missing, although .* holds saved generation\(s\) \['gen-000001'\]",
        ),
        (
            lambda p: (p / "notes.txt").write_text("x") and (p / "CURRENT").unlink(),
            r"CURRENT: missing, so .* is not a BM25 index",
        ),
    ],
)
def test_damaged_index_directories_are_reported_with_the_file(saved: Path, damage, message: str) -> None:
    """Each kind of damage raises DocumentStoreError naming the file at fault."""
    damage(saved)
    with pytest.raises(DocumentStoreError, match=message):
        BM25DocumentStore(path=str(saved)).count_documents()


def test_a_corrupted_npy_header_of_the_same_size_is_reported_with_the_file(saved: Path) -> None:
    """Garbage inside an array file (size unchanged) is caught when the file is opened, even with its digest
    rewritten to match (tests/needle_retrieval/index/test_integrity.py covers the digest itself)."""
    file = generation(saved) / "indptr.csc.index.npy"
    data = bytearray(file.read_bytes())
    data[:6] = b"XXXXXX"
    file.write_bytes(bytes(data))
    reseal(file)
    with pytest.raises(DocumentStoreError, match=r"indptr\.csc\.index\.npy: corrupted \.npy file"):
        BM25DocumentStore(path=str(saved)).count_documents()


def test_a_corrupted_document_line_is_reported_with_file_and_line(saved: Path) -> None:
    """A damaged JSON line in documents.jsonl is reported with its line number when that document is read, even
    with the file's digest rewritten to match."""
    file = generation(saved) / "documents.jsonl"
    lines = file.read_bytes().split(b"\n")
    lines[1] = b"#" * len(lines[1])
    file.write_bytes(b"\n".join(lines))
    reseal(file)
    store = BM25DocumentStore(path=str(saved))
    with pytest.raises(DocumentStoreError, match=r"documents\.jsonl: line 2 is corrupted"):
        store.bm25_retrieval("moon tides")


def test_hits_read_from_the_saved_file_are_kept_decoded_and_never_shared(saved: Path) -> None:
    """A repeated hit comes from memory (the file is not read again), and changing a returned document changes
    no later answer."""
    store = BM25DocumentStore(path=str(saved))
    first = store.bm25_retrieval("moon tides")
    expected = [(d.id, d.score, d.content, dict(d.meta)) for d in first]
    assert expected[0] == ("moon", first[0].score, DOCS[1].content, {"kind": "satellite", "retrieval_type": "sparse"})
    first[0].meta["kind"] = "changed by the caller"
    (generation(saved) / "documents.jsonl").write_bytes(b"")  # never done to a live index: proves the memory
    assert [(d.id, d.score, d.content, d.meta) for d in store.bm25_retrieval("moon tides")] == expected
    assert store.get_documents_by_id(["moon"]) == [DOCS[1]]


def test_recent_documents_keep_the_newest_within_their_size() -> None:
    recent = RecentDocuments(size=2)
    recent.remember({d.id: d for d in DOCS[:2]})
    recent.remember({"mars": DOCS[2]})
    assert [recent.get(d.id) for d in DOCS] == [None, DOCS[1], DOCS[2]]  # the oldest decoded went first


def test_a_missing_path_starts_an_empty_store(tmp_path: Path) -> None:
    """A path that does not exist yet is where a new index will be saved."""
    store = BM25DocumentStore(path=str(tmp_path / "new"), autosave=False)
    assert store.count_documents() == 0
    assert not os.path.exists(tmp_path / "new")


def test_documents_can_live_only_in_the_sibling_faiss_store(tmp_path: Path) -> None:
    """With document_store_path, the BM25 generation holds ids only and hits are read from the FAISS store."""
    from components.stores.faiss.document_store import FAISSDocumentStore

    embedded = [replace(d, embedding=[1.0, float(i), 0.5]) for i, d in enumerate(DOCS)]
    FAISSDocumentStore(path=str(tmp_path / "dense")).write_documents(embedded)
    BM25DocumentStore(path=str(tmp_path / "bm25"), document_store_path=str(tmp_path / "dense")).write_documents(DOCS)
    assert not (generation(tmp_path / "bm25") / "documents.jsonl").exists()
    loaded = BM25DocumentStore(path=str(tmp_path / "bm25"))
    assert loaded.settings["document_store_path"] == str((tmp_path / "dense").resolve())
    manifest = json.loads((generation(tmp_path / "bm25") / "manifest.json").read_text())
    assert manifest["document_store_path"] == "../dense"
    hits = loaded.bm25_retrieval("red planet", filters={"field": "meta.kind", "operator": "==", "value": "planet"})
    assert [(d.id, d.content) for d in hits] == [("mars", DOCS[2].content)]


def test_a_sibling_store_missing_a_document_is_reported(tmp_path: Path) -> None:
    """If the FAISS store lacks a document the BM25 index holds, the error names the path and the id."""
    from components.stores.faiss.document_store import FAISSDocumentStore

    FAISSDocumentStore(path=str(tmp_path / "dense")).write_documents(DOCS[:2])
    BM25DocumentStore(path=str(tmp_path / "bm25"), document_store_path=str(tmp_path / "dense")).write_documents(DOCS)
    lacks = r"document store at .*dense \(document_store_path\) lacks documents .*'mars'"
    with pytest.raises(DocumentStoreError, match=lacks):
        BM25DocumentStore(path=str(tmp_path / "bm25")).bm25_retrieval("red planet")
