"""FAISSDocumentStore on disk: round trips, lazy loading, damaged directories, and SIGKILL during save."""

import os
import random
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores import FAISSDocumentStore
from tests.support.paths import REPO

DIM = 8


def corpus(n: int) -> tuple[np.ndarray, list[Document]]:
    vectors = np.random.default_rng(0).standard_normal((n, DIM)).astype(np.float32)
    docs = [Document(id=f"d{i}", content=f"doc {i}", meta={"i": i}, embedding=vectors[i].tolist()) for i in range(n)]
    return vectors, docs


def generation(path: Path) -> Path:
    return path / (path / "CURRENT").read_text().strip()


def test_round_trip_restores_documents_vectors_and_info(tmp_path: Path) -> None:
    vectors, docs = corpus(50)
    store = FAISSDocumentStore(path=str(tmp_path / "s"), metric="cosine", index_factory="HNSW32")
    store.write_documents([*docs, Document(id="plain", content="no embedding")])
    store.delete_documents(["d3"])  # HNSW keeps d3 as a tombstone, which must survive the round trip
    store.info = {"model": "all-MiniLM-L6-v2", "dim": DIM}
    reopened = FAISSDocumentStore(path=str(tmp_path / "s"), metric="cosine", index_factory="HNSW32")
    assert reopened.info == {"model": "all-MiniLM-L6-v2", "dim": DIM}
    assert reopened.filter_documents() == store.filter_documents()
    assert reopened.search(vectors[:4], top_k=5) == store.search(vectors[:4], top_k=5)
    assert "d3" not in {doc.id for doc in reopened.search(vectors[3:4], top_k=50)[0]}
    assert reopened.embedding_dim == DIM


def test_store_is_lazy_and_only_the_live_generation_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "lazy"
    store = FAISSDocumentStore(path=str(path))
    assert not path.exists()  # __init__ touches nothing
    _, docs = corpus(5)
    for doc in docs:
        store.write_documents([doc])
    assert sorted(p.name for p in path.iterdir()) == ["CURRENT", "LOCK", "gen-00000005"]


def test_without_autosave_changes_wait_for_save(tmp_path: Path) -> None:
    _, docs = corpus(5)
    store = FAISSDocumentStore(path=str(tmp_path / "s"), autosave=False)
    store.write_documents(docs)
    assert FAISSDocumentStore(path=str(tmp_path / "s")).count_documents() == 0
    store.save()
    assert FAISSDocumentStore(path=str(tmp_path / "s")).count_documents() == 5


def test_reopening_with_other_settings_is_refused_and_load_uses_the_saved_ones(tmp_path: Path) -> None:
    vectors, docs = corpus(5)
    FAISSDocumentStore(path=str(tmp_path / "s"), metric="l2").write_documents(docs)
    with pytest.raises(ValueError, match=r"manifest\.json: the store was built with metric='l2'"):
        FAISSDocumentStore(path=str(tmp_path / "s"), metric="cosine").count_documents()
    loaded = FAISSDocumentStore.load(str(tmp_path / "s"))
    assert (loaded.metric, loaded.embedding_dim) == ("l2", DIM)
    assert loaded.search(vectors[2:3], 1)[0][0].score == pytest.approx(0.0, abs=1e-5)
    with pytest.raises(DocumentStoreError, match="no saved FAISS store"):
        FAISSDocumentStore.load(str(tmp_path / "nothing-here"))


def test_save_needs_a_path() -> None:
    with pytest.raises(ValueError, match="path=None"):
        FAISSDocumentStore().save()


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda gen: (gen / "vectors.faiss").write_bytes((gen / "vectors.faiss").read_bytes()[:100]), "vectors.faiss"),
        (
            lambda gen: (gen / "documents.sqlite").write_bytes(b"x" * (gen / "documents.sqlite").stat().st_size),
            "documents.sqlite",
        ),
        (lambda gen: (gen / "manifest.json").unlink(), "manifest.json"),
        (lambda gen: (gen / "manifest.json").write_text("{not json"), "manifest.json"),
        (lambda gen: (gen.parent / "CURRENT").write_text("../../etc"), "CURRENT"),
        (lambda gen: (gen.parent / "CURRENT").unlink(), "CURRENT"),
    ],
)
def test_damaged_directories_raise_errors_naming_the_file(
    tmp_path: Path, damage: Callable[[Path], object], named: str
) -> None:
    _, docs = corpus(20)
    FAISSDocumentStore(path=str(tmp_path / "s")).write_documents(docs)
    damage(generation(tmp_path / "s"))
    with pytest.raises(DocumentStoreError, match=named):
        FAISSDocumentStore(path=str(tmp_path / "s")).count_documents()


_SAVER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from haystack import Document
    from components.stores import FAISSDocumentStore

    BASE, DIM = {base}, {dim}
    vectors = np.random.default_rng(0).standard_normal((BASE + 5000, DIM)).astype(np.float32)
    store = FAISSDocumentStore(path=sys.argv[1], metric="l2", autosave=False)
    if store.count_documents() == 0:
        store.write_embeddings([Document(id=f"base-{{i}}", content=f"base {{i}}") for i in range(BASE)], vectors[:BASE])
        store.info = {{"step": -1}}
        store.save()
    step = store.info["step"] + 1
    print("ready", flush=True)
    while True:
        store.write_documents([Document(id=f"step-{{step}}", embedding=vectors[BASE + step].tolist())])
        store.info = {{"step": step}}
        store.save()
        step += 1
    """
)


def test_sigkill_in_the_middle_of_saves_leaves_the_old_or_the_new_state_complete(tmp_path: Path) -> None:
    """A child saves a 10k-vector store in a loop; we SIGKILL it while a save is being written, three times."""
    base, dim, path = 10_000, 128, tmp_path / "store"
    (tmp_path / "saver.py").write_text(_SAVER.format(base=base, dim=dim))
    vectors = np.random.default_rng(0).standard_normal((base + 5000, dim)).astype(np.float32)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng, killed_mid_save = random.Random(7), 0
    for _ in range(3):
        child = subprocess.Popen(
            [sys.executable, str(tmp_path / "saver.py"), str(path)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout.readline().strip() == "ready"
            _wait_for_a_save_in_progress(path, child)
            time.sleep(rng.uniform(0.0, 0.03))
        finally:
            child.kill()
            child.wait()
        killed_mid_save += any(entry.name.endswith(".partial") for entry in path.iterdir())
        store = FAISSDocumentStore.load(str(path))
        step = store.info["step"]  # -1: killed during the first step's save, the base state survives
        assert store.count_documents() == base + step + 1
        ids = [f"step-{i}" for i in range(step + 1)]
        assert [doc.id for doc in store.get_documents_by_id(ids)] == ids
        newest = f"step-{step}" if step >= 0 else f"base-{base - 1}"
        nearest = store.search(vectors[[0, base + step]], top_k=1)  # l2: each vector's nearest is itself
        assert [hits[0].id for hits in nearest] == ["base-0", newest]
    assert killed_mid_save >= 1, "no kill landed inside a save: the test proved nothing"


def _wait_for_a_save_in_progress(path: Path, child: subprocess.Popen) -> None:
    """Return as soon as a generation is being written (its .partial directory exists)."""
    deadline = time.monotonic() + 60
    while not any(entry.name.endswith(".partial") for entry in path.iterdir()):
        assert child.poll() is None, "the saving process died on its own"
        assert time.monotonic() < deadline, "no save started within 60 s"
        time.sleep(0.001)
