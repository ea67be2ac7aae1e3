"""Verified bytes: a changed, damaged, linked or hand-edited file of an index is refused, never loaded.

Every generation records the size and sha256 of each file it owns, and the generation and manifest digest of each
store inside it (``components.stores.crash_safe_generations``). Through the real CLI, each tampering below makes
`needle search` exit 2 with one line naming the file: random bytes of the same size in every array (the numba
kernels crashed with SIGSEGV on some, answered scores of 9e30 on others), SQL edits of the stored documents, a
generation replaced by a symbolic link to another index's, hand-edited manifest fields. Below the digests, the
stores check each array's dtype, shape and range before numba or FAISS sees it: those checks are shown with the
digest rewritten to match (``tests.support.integrity.reseal``), as by someone rewriting both.
"""

import contextlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.faiss.document_store import FAISSDocumentStore
from needle_retrieval.cli import main
from tests.support.integrity import edit_manifest, live, reseal
from tests.support.paths import SAMPLE

NEEDLE = str(Path(sys.executable).with_name("needle"))
QUERY = "read and write files"
BM25 = "bm25/gen-000001"
DENSE = "dense/gen-00000001"
ARRAYS = [f"{BM25}/{name}" for name in ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")]
ARRAYS += [f"{BM25}/tokens.npy", f"{BM25}/token_offsets.npy", f"{DENSE}/tombstones.npy", f"{DENSE}/vectors.faiss"]
pytestmark = pytest.mark.integration


def corpus_slice(directory: Path, name: str, start: int, stop: int) -> Path:
    """Lines [start, stop) of the sample corpus as a corpus file of their own."""
    path = directory / name
    path.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[start:stop]), encoding="utf-8")
    return path


def build(corpus: Path, out: Path, *flags: str) -> Path:
    """`needle index CORPUS --out OUT FLAGS`, which must succeed."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(["index", str(corpus), "--out", str(out), *flags]) == 0, err.getvalue()
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A dense + BM25 index of 40 sample lines, and a BM25-only index of 20 others (another corpus)."""
    root = tmp_path_factory.mktemp("integrity")
    hybrid = build(corpus_slice(root, "a.jsonl", 0, 40), root / "hybrid", "--bm25")
    other = build(corpus_slice(root, "b.jsonl", 60, 80), root / "other", "--bm25", "--no-dense")
    return {"hybrid": hybrid, "other": other}


def copy_of(built: dict[str, Path], name: str, tmp_path: Path) -> Path:
    """A fresh copy of one of the built indexes to damage."""
    return Path(shutil.copytree(built[name], tmp_path / name, symlinks=True))


def one_line_error(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    """Run the CLI in-process expecting a user error: exit 2 and exactly one `needle: error:` line, returned."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("needle: error: "), err
    return err


def random_bytes(path: Path) -> None:
    """Replace the file's bytes with random ones, keeping its size."""
    path.write_bytes(os.urandom(path.stat().st_size))


def random_array_values(path: Path) -> None:
    """Keep the .npy header, randomize the values (same size): the header still parses."""
    data = bytearray(path.read_bytes())
    start = data.index(b"\n") + 1
    data[start:] = os.urandom(len(data) - start)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ARRAYS)
def test_random_bytes_of_the_same_size_in_any_array_are_refused_naming_it(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture, name: str
) -> None:
    index = copy_of(built, "hybrid", tmp_path)
    random_bytes(live(index) / name)
    err = one_line_error(capsys, ["search", str(index), QUERY, "--json"])
    assert f"{live(index) / name}: corrupted or changed since it was saved" in err


@pytest.mark.parametrize("name", [a for a in ARRAYS if a.startswith(BM25)])
def test_random_values_under_a_valid_header_never_crash_nor_answer(
    built: dict[str, Path], tmp_path: Path, name: str
) -> None:
    """In a process of its own: random row numbers crashed numba (SIGSEGV), random weights answered 9e30 scores."""
    index = copy_of(built, "hybrid", tmp_path)
    file = live(index) / name
    random_array_values(file)
    argv = [NEEDLE, "search", str(index), QUERY, "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{file}: corrupted or changed since it was saved" in done.stderr


def sql(statement: str) -> Callable[[Path], None]:
    """A change to the dense part's documents.sqlite, made with SQLite itself (the file stays a valid database)."""

    def change(index: Path) -> None:
        with contextlib.closing(sqlite3.connect(live(index) / DENSE / "documents.sqlite")) as db, db:
            db.execute(statement)

    return change


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE documents SET document = replace(document, 'file', 'FILE')",
        "UPDATE documents SET id = 'x' || id WHERE row = 0",
        "DELETE FROM documents WHERE row = 1",
    ],
)
def test_sql_edits_of_the_stored_documents_are_refused(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture, statement: str
) -> None:
    """Both the dense search and the BM25 part (which reads its documents from there) refuse the edited file."""
    index = copy_of(built, "hybrid", tmp_path)
    sql(statement)(index)
    for mode in ("bm25", "hybrid"):
        err = one_line_error(capsys, ["search", str(index), QUERY, "--mode", mode, "--json"])
        assert f"{live(index) / DENSE / 'documents.sqlite'}: corrupted or changed" in err


def test_an_edited_document_line_of_a_bm25_index_is_refused(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    index = copy_of(built, "other", tmp_path)
    file = live(index) / BM25 / "documents.jsonl"
    file.write_bytes(file.read_bytes().replace(b"a", b"X", 5))
    err = one_line_error(capsys, ["search", str(index), QUERY, "--json"])
    assert f"{file}: corrupted or changed" in err


def test_a_generation_replaced_by_a_link_to_another_index_is_refused(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    index, other = copy_of(built, "hybrid", tmp_path), copy_of(built, "other", tmp_path)
    generation = live(index)
    shutil.rmtree(generation)
    generation.symlink_to(live(other), target_is_directory=True)
    err = one_line_error(capsys, ["search", str(index), QUERY, "--json"])
    assert f"{generation}: a symbolic link" in err


@pytest.mark.parametrize("part", [DENSE, BM25])
def test_a_store_generation_or_file_replaced_by_a_link_is_refused(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture, part: str
) -> None:
    """A link to an identical copy still is not the index's own file: a link may point anywhere, later."""
    index, twin = copy_of(built, "hybrid", tmp_path), copy_of(built, "hybrid", tmp_path / "twin")
    linked = live(index) / part / ("documents.sqlite" if part == DENSE else "ids.json")
    linked.unlink()
    linked.symlink_to(live(twin) / part / linked.name)
    err = one_line_error(capsys, ["search", str(index), QUERY, "--json"])
    assert f"{linked}: a symbolic link" in err


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    """Edit a manifest and seal it again, as a tamperer would (an unsealed edit is refused before: test_seal.py)."""
    edit_manifest(path, change)


def tombstones_reshaped(index: Path) -> Path:
    """A (2, 3) tombstone array in place of the 1-D one, its size written into the store's manifest."""
    file = live(index) / DENSE / "tombstones.npy"
    np.save(file, np.zeros((2, 3), dtype=np.int64))
    edit_json(file.parent / "manifest.json", lambda m: m["files"].update({file.name: file.stat().st_size}))
    return file.parent / "manifest.json"


def params_replaced(index: Path) -> Path:
    """Another params.index.json, its size written into the BM25 manifest."""
    file = live(index) / BM25 / "params.index.json"
    file.write_text(json.dumps({"k1": None, "method": "lucene"}))
    edit_json(file.parent / "manifest.json", lambda m: m["files"].update({file.name: file.stat().st_size}))
    return file.parent / "manifest.json"


def document_store_path_removed(index: Path) -> Path:
    edit_json(live(index) / BM25 / "manifest.json", lambda m: m.update(document_store_path=None))
    return live(index) / BM25 / "manifest.json"


def digests_removed(index: Path) -> Path:
    """As an index built before digests were recorded (or one whose digests were deleted to skip the check)."""
    edit_json(live(index) / "manifest.json", lambda m: m.pop("sha256"))
    return live(index) / "manifest.json"


def store_digests_removed(index: Path) -> Path:
    edit_json(live(index) / DENSE / "manifest.json", lambda m: m.pop("sha256"))
    return live(index) / DENSE / "manifest.json"


@pytest.mark.parametrize(
    "edit", [tombstones_reshaped, params_replaced, document_store_path_removed, digests_removed, store_digests_removed]
)
def test_hand_edited_manifests_are_refused_naming_the_file(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture, edit: Callable[[Path], Path]
) -> None:
    index = copy_of(built, "hybrid", tmp_path)
    manifest = edit(index)
    err = one_line_error(capsys, ["search", str(index), QUERY, "--json"])
    assert str(manifest) in err
    assert "rebuild" in err


def test_a_manifest_field_changed_by_hand_is_refused_by_its_seal(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The index manifest's own fields (the model, the backend) are covered by no file digest: its seal covers them."""
    index = copy_of(built, "other", tmp_path)
    manifest_file = live(index) / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest_file.write_text(json.dumps({**manifest, "bm25_lang": "zh"}))
    err = one_line_error(capsys, ["search", str(index), QUERY, "--json"])
    assert f"{manifest_file}: changed after it was written" in err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(model=""), "a dense part needs a model name"),
        (lambda m: m.update(model="  "), "a dense part needs a model name"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("9" * 4_301, "corrupted JSON"),
    ],
    ids=["empty-model", "blank-model", "nested-100000-deep", "4301-digit-number"],
)
def test_a_resealed_manifest_with_values_no_build_writes_is_one_line(
    built: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    change: Callable[[dict], None] | str,
    message: str,
) -> None:
    """Before: an AttributeError from sentence-transformers (model ""), a RecursionError (deep JSON), a ValueError
    (Python's 4,300-digit limit). A value Python's parser cannot read back is written as text, unsealed."""
    index = copy_of(built, "hybrid", tmp_path)
    manifest_file = live(index) / "manifest.json"
    if isinstance(change, str):
        manifest_file.write_text(manifest_file.read_text()[:-1] + f', "x": {change}}}')
    else:
        edit_json(manifest_file, change)
    err = one_line_error(capsys, ["search", str(index), QUERY, "--json"])
    assert message in err


def test_changed_embeddings_are_not_reused_by_a_rebuild(built: dict[str, Path], tmp_path: Path) -> None:
    """embeddings.npy is read by rebuilds only (searches use the FAISS part): it is verified then, and a changed
    one is encoded again instead of being carried into the new generation."""
    index = copy_of(built, "hybrid", tmp_path)
    embeddings = live(index) / "embeddings.npy"
    random_array_values(embeddings)
    tampered = embeddings.read_bytes()
    build(corpus_slice(tmp_path, "a.jsonl", 0, 40), index, "--bm25")
    rebuilt = live(index) / "embeddings.npy"
    assert rebuilt.stat().st_ino != embeddings.stat().st_ino  # encoded again, not linked
    assert rebuilt.read_bytes() != tampered
    assert np.allclose(np.load(rebuilt), np.load(live(built["hybrid"]) / "embeddings.npy"), atol=1e-5)


# The stores' own checks, under the digests: each file rewritten together with its digest.

BM25_DOCS = [Document(id=f"d{i}", content=f"word{i % 7} planet tide{i % 3} moon") for i in range(30)]


@pytest.fixture
def bm25_store(tmp_path: Path) -> Path:
    """A saved standalone BM25 store (documents.jsonl of its own)."""
    path = tmp_path / "bm25"
    BM25DocumentStore(path=str(path)).write_documents(BM25_DOCS)
    return path


def rewrite_array(values: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    """Replace an array file by VALUES(its array), then reseal its digest."""

    def change(file: Path) -> None:
        np.save(file, values(np.load(file)))
        reseal(file)

    return change


def rewrite_json(values: Callable[[object], object]) -> Callable[[Path], None]:
    """Replace a JSON file by VALUES(its content), then reseal its digest."""

    def change(file: Path) -> None:
        file.write_text(json.dumps(values(json.loads(file.read_text()))))
        reseal(file)

    return change


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("indices.csc.index.npy", rewrite_array(lambda a: a + 10_000), r"values from .* where the index holds"),
        ("indices.csc.index.npy", rewrite_array(lambda a: a.astype(np.int64)), "of type int32, got int64"),
        ("data.csc.index.npy", rewrite_array(lambda a: np.full_like(a, 9e30)), "values from 9e"),
        ("data.csc.index.npy", rewrite_array(lambda a: np.full_like(a, np.nan)), "values from nan"),
        ("data.csc.index.npy", rewrite_array(lambda a: a.reshape(1, -1)), "expected a 1-D array"),
        ("indptr.csc.index.npy", rewrite_array(lambda a: a[::-1].copy()), "offsets must start at 0"),
        ("token_offsets.npy", rewrite_array(lambda a: a + 1), "offsets must start at 0"),
        ("vocab.index.json", rewrite_json(lambda v: dict.fromkeys(v, 0)), "a term id is given to two terms"),
        ("ids.json", rewrite_json(lambda ids: ["same"] * len(ids)), "an id is listed twice"),
        ("params.index.json", rewrite_json(lambda p: {**p, "k1": 5.0}), "k1 is 5.0 where"),
        ("documents.offsets.npy", rewrite_array(lambda a: a * 2), "the offsets end at"),
    ],
)
def test_bm25_arrays_are_checked_for_dtype_shape_and_range_before_numba_sees_them(
    bm25_store: Path, name: str, change: Callable[[Path], None], message: str
) -> None:
    file = live(bm25_store) / name
    change(file)
    with pytest.raises(DocumentStoreError, match=rf"{file.name}: corrupted, .*{message}"):
        BM25DocumentStore(path=str(bm25_store)).bm25_retrieval("planet moon")


def test_term_ids_out_of_the_vocabulary_are_refused_when_a_compaction_reads_them(bm25_store: Path) -> None:
    """tokens.npy is verified when the store opens, range-checked when a compaction or save first reads it."""
    file = live(bm25_store) / "tokens.npy"
    rewrite_array(lambda a: a + 1_000_000)(file)
    store = BM25DocumentStore(path=str(bm25_store))
    assert store.bm25_retrieval("planet moon")  # searches never read it
    with pytest.raises(DocumentStoreError, match=r"tokens\.npy: corrupted, values from"):
        store.delete_documents([f"d{i}" for i in range(10)])  # a third of the rows: its save compacts


@pytest.fixture
def faiss_store(tmp_path: Path) -> Path:
    """A saved standalone FAISS store of 20 documents, one of them deleted (HNSW keeps it as a tombstone)."""
    path = tmp_path / "dense"
    vectors = np.random.default_rng(0).standard_normal((20, 8)).astype(np.float32)
    store = FAISSDocumentStore(path=str(path), index_factory="HNSW8")
    store.write_embeddings([Document(id=f"d{i}", content=f"text {i}") for i in range(20)], vectors)
    store.delete_documents(["d3"])
    return path


def other_dimension(file: Path) -> None:
    """A valid FAISS index of another dimension in place of vectors.faiss."""
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(5))
    index.add_with_ids(np.zeros((20, 5), np.float32), np.arange(20, dtype=np.int64))
    faiss.write_index(index, str(file))
    reseal(file)


def sqlite_embedding_cut(file: Path) -> None:
    """One stored embedding shortened to 4 values, with SQLite."""
    with contextlib.closing(sqlite3.connect(file)) as db, db:
        db.execute("UPDATE documents SET embedding = substr(embedding, 1, 16) WHERE row = 5")
    reseal(file)


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("tombstones.npy", rewrite_array(lambda a: np.zeros((2, 3), np.int64)), "expected at most 20 int64 rows"),
        ("tombstones.npy", rewrite_array(lambda a: a.astype(np.float64)), "expected at most 20 int64 rows"),
        ("tombstones.npy", rewrite_array(lambda a: a + 1_000), r"distinct rows in \[0, 20\)"),
        ("vectors.faiss", other_dimension, "its dimension is 5, the manifest gives 8"),
        ("documents.sqlite", sqlite_embedding_cut, "row 5 holds an embedding of another size than 8"),
    ],
)
def test_faiss_files_are_checked_before_faiss_uses_them(
    faiss_store: Path, name: str, change: Callable[[Path], None], message: str
) -> None:
    file = live(faiss_store) / name
    change(file)
    with pytest.raises(DocumentStoreError, match=rf"{file.name}: corrupted, .*{message}"):
        FAISSDocumentStore.load(str(faiss_store)).count_documents()


@pytest.mark.parametrize(
    "document",
    ["[" * 5_000 + "]" * 5_000, '{"id": "d5", "content": "x", "meta": {"n": ' + "9" * 4_301 + "}}", '"text"'],
    ids=["nested-5000-deep", "4301-digit-number", "not-an-object"],
)
def test_a_stored_row_that_is_no_document_is_one_error(faiss_store: Path, document: str) -> None:
    """A resealed documents.sqlite whose row holds JSON no save writes: one DocumentStoreError, not a RecursionError,
    Python's digit-limit ValueError or an AttributeError from Document.from_dict."""
    file = live(faiss_store) / "documents.sqlite"
    with contextlib.closing(sqlite3.connect(file)) as db, db:
        db.execute("UPDATE documents SET document = ? WHERE row = 5", (document,))
    reseal(file)
    with pytest.raises(DocumentStoreError, match="a stored row is not a document"):
        FAISSDocumentStore.load(str(faiss_store)).filter_documents()


def test_each_file_is_hashed_once_per_process_and_version(bm25_store: Path) -> None:
    """Reopening a store does not hash its files again; a file changed since is hashed (and refused) anew."""
    import components.stores.file_digests as digests

    assert BM25DocumentStore(path=str(bm25_store)).count_documents() == 30
    calls: list[Path] = []
    original = digests.sha256_file

    def counting(path: Path, advance: digests.Advance | None = None) -> str:
        calls.append(path)
        return original(path, advance)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(digests, "sha256_file", counting)
        assert BM25DocumentStore(path=str(bm25_store)).count_documents() == 30
        assert calls == []
        random_bytes(live(bm25_store) / "ids.json")
        with pytest.raises(DocumentStoreError, match=r"ids\.json: corrupted or changed"):
            BM25DocumentStore(path=str(bm25_store)).count_documents()
        assert [p.name for p in calls] == ["ids.json"]
