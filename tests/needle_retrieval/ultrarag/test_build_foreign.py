"""Indexes UltraRAG built at the paths its parameter file names (a FAISS file, bm25s' directory, a Milvus Lite
database): refused without `overwrite=true`, replaced by a needle index with it, never lost to a crash
(``needle_retrieval.ultrarag.foreign``). The files are written with UltraRAG's own calls (tests.support.ultrarag_files);
the processes killed are real ones."""

import contextlib
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from needle_retrieval.errors import NeedleError
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.trust import config_trust
from needle_retrieval.search.searcher import Searcher
from needle_retrieval.ultrarag.build import bm25_with_config, index_from_embeddings
from needle_retrieval.ultrarag.config import load_config
from tests.support.ultrarag_files import (
    corpus_contents,
    corpus_ids,
    encode_query,
    make_project,
    milvus_lite_database,
    tree,
    ultrarag_bm25,
    ultrarag_embeddings,
    ultrarag_faiss,
)

QUERY = "how are AIFF files structured"
FAISS_KEY = "index_backend_configs.faiss.index_path"


def paths(project: Path) -> tuple[Path, Path, Path]:
    """embedding_path, faiss index_path and bm25 save_path of the example file."""
    root = project.parent
    return root / "embedding" / "embedding.npy", root / "index" / "index.index", root / "index" / "bm25"


def top_ids(project: Path, index: Path, query: str) -> list[str]:
    searcher = Searcher(index, top_k=5, trust=config_trust(load_config(project).spec))
    try:
        return [doc.id for doc in searcher.search([query])[0]]
    finally:
        searcher.close()


def exact_ids(project: Path, rows: np.ndarray, model: str) -> list[str]:
    """What a flat inner-product index of ROWS answers QUERY with."""
    ids = corpus_ids(project)
    return [ids[i] for i in np.argsort(-(rows @ encode_query(model, QUERY)))[:5]]


@pytest.fixture(autouse=True)
def project_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs from its project's root: relative paths resolve against it, as UltraRAG resolves them."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def built(tmp_path: Path, tiny_model: str) -> tuple[Path, np.ndarray]:
    """An UltraRAG project after UltraRAG's retriever_embed, retriever_index and bm25_index; and its rows."""
    project = make_project(tmp_path, tiny_model)
    npy, faiss_file, bm25 = paths(project)
    rows = ultrarag_embeddings(tiny_model, corpus_contents(project), npy)
    ultrarag_faiss(rows, faiss_file)
    ultrarag_bm25(corpus_contents(project), bm25)
    return project, rows


def test_ultrarag_faiss_file_is_refused_then_replaced_from_its_embeddings(
    built: tuple[Path, np.ndarray], tiny_model: str
) -> None:
    project, rows = built
    npy, faiss_file, _ = paths(project)
    before = tree(faiss_file)
    with pytest.raises(NeedleError) as caught:
        index_from_embeddings(project, {})
    assert str(caught.value) == (
        f"{faiss_file} ({FAISS_KEY}) holds a FAISS index file that UltraRAG built, not a needle index: "
        "pass overwrite=true to replace it by a needle index"
    )
    assert tree(faiss_file) == before

    assert index_from_embeddings(project, {"overwrite": True}) == f"indexed 40 documents (dense) into {faiss_file}"
    assert IndexManifest.load(faiss_file).documents == 40
    np.testing.assert_array_equal(np.load(npy), rows)  # UltraRAG's vectors, not re-encoded
    assert top_ids(project, faiss_file, QUERY) == exact_ids(project, rows, tiny_model)
    assert sorted(p.name for p in faiss_file.parent.iterdir()) == ["bm25", "index.index"]  # nothing left beside
    # A needle index there now: rebuilt from the .npy without overwrite.
    assert index_from_embeddings(project, {}) == f"indexed 40 documents (dense) into {faiss_file}"


def test_ultrarag_bm25_directory_is_refused_then_replaced(built: tuple[Path, np.ndarray]) -> None:
    project, _ = built
    _, _, bm25 = paths(project)
    before = tree(bm25)
    with pytest.raises(NeedleError, match=r"holds a bm25s index directory that UltraRAG built, not a needle index: "):
        bm25_with_config(project, {})
    assert tree(bm25) == before
    assert bm25_with_config(project, {"overwrite": True}) == f"indexed 40 documents (bm25) into {bm25}"
    assert top_ids(project, bm25, "Abstract Base Classes, PEP 3119")[0] == "abc-0"
    assert sorted(p.name for p in bm25.parent.iterdir()) == ["bm25", "index.index"]


@pytest.mark.parametrize("layout", ["directory", "sqlite file"])
def test_milvus_lite_database_is_refused_then_replaced(tmp_path: Path, tiny_model: str, layout: str) -> None:
    project = make_project(tmp_path, tiny_model, index_backend="milvus")
    npy, _, _ = paths(project)
    database = project.parent / "index" / "milvus_demo.db"
    rows = ultrarag_embeddings(tiny_model, corpus_contents(project), npy)
    if layout == "directory":  # Milvus Lite as installed here
        milvus_lite_database(database, 32)
    else:  # older Milvus Lite releases keep one SQLite file
        database.parent.mkdir()
        with contextlib.closing(sqlite3.connect(database)) as connection:
            connection.execute("CREATE TABLE collections (name TEXT)")
            connection.commit()
    before = tree(database)
    with pytest.raises(NeedleError, match=r"milvus_demo.db \(index_backend_configs.milvus.uri\) holds a Milvus Lite"):
        index_from_embeddings(project, {})
    assert tree(database) == before
    assert index_from_embeddings(project, {"overwrite": True}) == f"indexed 40 documents (dense) into {database}"
    assert top_ids(project, database, QUERY) == exact_ids(project, rows, tiny_model)


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_anything_else_at_the_path_is_never_replaced(built: tuple[Path, np.ndarray], kind: str) -> None:
    project, _ = built
    _, faiss_file, _ = paths(project)
    faiss_file.unlink()
    if kind == "file":
        faiss_file.write_text("my notes\n")
    else:
        faiss_file.mkdir()
        (faiss_file / "notes.txt").write_text("my notes\n")
    before = tree(faiss_file)
    with pytest.raises(NeedleError) as caught:
        index_from_embeddings(project, {"overwrite": True})
    assert str(caught.value) == (
        f"{faiss_file} ({FAISS_KEY}) holds neither a needle index nor an index UltraRAG builds; refusing to replace "
        f"it: move it away or choose another {FAISS_KEY}"
    )
    assert tree(faiss_file) == before


BUILD = """
import sys
from pathlib import Path
from needle_retrieval.ultrarag.build import index_from_embeddings
index_from_embeddings(Path(sys.argv[1]), {"overwrite": True})
"""


def test_a_replacement_killed_while_building_leaves_ultrarag_index_and_the_next_one_completes(
    tmp_path: Path, tiny_model: str
) -> None:
    project = make_project(tmp_path, tiny_model, passages=1)
    documents = 30_000  # long enough a build to be killed in the middle
    corpus = project.parent / "data" / "corpus_example.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "contents": f"passage {i}"}) + "\n" for i in range(documents)))
    npy, faiss_file, _ = paths(project)
    npy.parent.mkdir()
    rows = np.random.default_rng(0).standard_normal((documents, 32)).astype(np.float32)
    np.save(npy, rows)
    ultrarag_faiss(rows, faiss_file)
    before = tree(faiss_file)
    staging = faiss_file.with_name(".index.index.needle-new")
    with subprocess.Popen([sys.executable, "-c", BUILD, str(project)], cwd=tmp_path, stderr=subprocess.DEVNULL) as proc:
        deadline = time.monotonic() + 120
        while not staging.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, "the build ended before its staging directory could be seen"
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert tree(faiss_file) == before  # UltraRAG's index is whole, where it was
    assert (
        index_from_embeddings(project, {"overwrite": True})
        == f"indexed {documents} documents (dense) into {faiss_file}"
    )
    assert sorted(p.name for p in faiss_file.parent.iterdir()) == ["index.index"]  # the killed build's debris is gone


def test_a_swap_killed_between_its_two_renames_is_finished_by_the_next_build(built: tuple[Path, np.ndarray]) -> None:
    project, _ = built
    _, faiss_file, _ = paths(project)
    faiss_bytes = faiss_file.read_bytes()
    index_from_embeddings(project, {"overwrite": True})
    # The state a kill between the renames leaves: UltraRAG's file moved aside, the whole needle index beside it.
    faiss_file.rename(faiss_file.with_name(".index.index.needle-new"))
    faiss_file.with_name(".index.index.ultrarag-old").write_bytes(faiss_bytes)
    assert index_from_embeddings(project, {}) == f"indexed 40 documents (dense) into {faiss_file}"
    assert IndexManifest.load(faiss_file).generation == "gen-000002"  # the swapped-in index, rebuilt
    assert sorted(p.name for p in faiss_file.parent.iterdir()) == ["bm25", "index.index"]


def test_ultrarag_index_moved_aside_without_a_whole_needle_index_beside_it_is_put_back(
    built: tuple[Path, np.ndarray],
) -> None:
    project, _ = built
    _, faiss_file, _ = paths(project)
    before = tree(faiss_file)
    partial = faiss_file.with_name(".index.index.needle-new")
    (partial / "gen-000001.partial").mkdir(parents=True)  # no CURRENT: never whole
    faiss_file.rename(faiss_file.with_name(".index.index.ultrarag-old"))
    with pytest.raises(NeedleError, match="holds a FAISS index file that UltraRAG built"):
        index_from_embeddings(project, {})
    assert tree(faiss_file) == before
    assert sorted(p.name for p in faiss_file.parent.iterdir()) == ["bm25", "index.index"]


def test_a_failed_replacement_leaves_ultrarag_index_and_nothing_beside_it(
    built: tuple[Path, np.ndarray], tiny_model: str
) -> None:
    project, _ = built
    npy, faiss_file, _ = paths(project)
    index_from_embeddings(project, {"overwrite": True})  # adopts the .npy: its fingerprint written beside it
    sidecar = Path(f"{npy}.json")
    sidecar.write_text(sidecar.read_text().replace('"dim": 32', '"dim": 16'))  # a fingerprint the rows do not fit
    shutil.rmtree(faiss_file)
    ultrarag_faiss(np.load(npy), faiss_file)  # UltraRAG's index there again
    before = tree(faiss_file)
    with pytest.raises(NeedleError) as caught:  # refused by the build itself, once the staging directory was made
        index_from_embeddings(project, {"overwrite": True})
    assert str(caught.value) == (
        f"embedding_path {npy} holds a float32 array of shape (40, 32), but its fingerprint promises float32 "
        "of shape (40, 16); run retriever_embed with overwrite=true to encode the corpus again"
    )
    assert tree(faiss_file) == before
    assert sorted(p.name for p in faiss_file.parent.iterdir()) == ["bm25", "index.index"]
