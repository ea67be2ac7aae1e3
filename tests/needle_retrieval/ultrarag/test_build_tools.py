"""UltraRAG's build tools on needle (``needle_retrieval.ultrarag.build``): `retriever_embed` encodes into
`embedding_path`, `retriever_index` indexes that file as it is without the model, `bm25_index` builds at
`save_path`. Real parts: the tiny sentence-transformers model, the corpus reader, FAISS, bm25s, needle's search."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from needle_retrieval.errors import NeedleError
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.trust import config_trust
from needle_retrieval.search.searcher import Searcher
from needle_retrieval.ultrarag.build import bm25_with_config, embed_with_config, index_from_embeddings
from needle_retrieval.ultrarag.config import load_config
from tests.support.ultrarag_files import corpus_contents, corpus_ids, encode_query, make_project, ultrarag_embeddings

QUERY = "compress data with bz2"
REEMBED = "run retriever_embed with overwrite=true"


@pytest.fixture
def project(tmp_path: Path, tiny_model: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An UltraRAG project (40 passages) whose parameter file names the tiny model, run from its root (relative
    paths resolve against the working directory, as UltraRAG resolves them)."""
    monkeypatch.chdir(tmp_path)
    return make_project(tmp_path, tiny_model)


def npy_of(project: Path) -> Path:
    return project.parent / "embedding" / "embedding.npy"


def index_of(project: Path) -> Path:
    return project.parent / "index" / "index.index"


def top_ids(project: Path, index: Path, query: str, k: int = 5) -> list[str]:
    """The ids needle's search of INDEX answers QUERY with (the parameter file's trust_remote_code trusted)."""
    searcher = Searcher(index, top_k=k, trust=config_trust(load_config(project).spec))
    try:
        return [doc.id for doc in searcher.search([query])[0]]
    finally:
        searcher.close()


def exact_ids(project: Path, rows: np.ndarray, model: str, query: str, k: int = 5) -> list[str]:
    """The ids of ROWS' K best inner products with MODEL's vector of QUERY: what a flat IP index answers."""
    ids = corpus_ids(project)
    return [ids[i] for i in np.argsort(-(rows @ encode_query(model, query)))[:k]]


def test_retriever_embed_writes_one_float32_row_per_line_and_keeps_a_file_already_there(
    project: Path, tiny_model: str
) -> None:
    npy = npy_of(project)
    assert embed_with_config(project, {}) == f"embedded 40 documents into {npy}"
    rows = np.load(npy)
    assert (rows.dtype, rows.shape) == (np.float32, (40, 32))
    expected = ultrarag_embeddings(tiny_model, corpus_contents(project), project.parent / "direct.npy")
    np.testing.assert_allclose(rows, expected, atol=1e-5)  # row i is corpus line i
    assert not index_of(project).exists()  # embedding only: no index yet

    np.save(npy, np.zeros((40, 32), dtype=np.float32))  # another file there: kept, as UltraRAG keeps it
    assert "kept the embeddings already at" in embed_with_config(project, {"overwrite": False})
    assert not np.load(npy).any()
    assert embed_with_config(project, {"overwrite": True}) == f"embedded 40 documents into {npy}"
    np.testing.assert_allclose(np.load(npy), expected, atol=1e-5)
    assert sorted(p.name for p in npy.parent.iterdir()) == ["embedding.npy", "embedding.npy.json"]  # no temp file


def test_retriever_index_indexes_ultrarag_embeddings_without_the_model(project: Path, tiny_model: str) -> None:
    model = project.parent / "model"
    shutil.copytree(tiny_model, model)
    make_project(project.parent, str(model))
    rows = ultrarag_embeddings(str(model), corpus_contents(project), npy_of(project))  # np.save: no fingerprint
    model.rename(project.parent / "model-away")  # retriever_index must not need the model at all

    assert index_from_embeddings(project, {}) == f"indexed 40 documents (dense) into {index_of(project)}"
    np.testing.assert_array_equal(np.load(npy_of(project)), rows)  # reused as it was, not re-encoded
    assert IndexManifest.load(index_of(project)).dim == 32

    (project.parent / "model-away").rename(model)  # queries need it
    assert top_ids(project, index_of(project), QUERY) == exact_ids(project, rows, str(model), QUERY)


def test_retriever_index_after_retriever_embed_only_indexes(project: Path, tiny_model: str) -> None:
    embed_with_config(project, {})
    before = npy_of(project).read_bytes()
    assert (
        index_from_embeddings(project, {"overwrite": True}) == f"indexed 40 documents (dense) into {index_of(project)}"
    )
    assert npy_of(project).read_bytes() == before
    rows = np.load(npy_of(project))
    assert top_ids(project, index_of(project), QUERY) == exact_ids(project, rows, tiny_model, QUERY)


def test_retriever_index_without_embeddings_names_retriever_embed(project: Path) -> None:
    with pytest.raises(NeedleError) as caught:
        index_from_embeddings(project, {})
    message = str(caught.value)
    assert f"embedding_path {npy_of(project)} does not exist: run retriever_embed first" in message
    assert "--" not in message
    assert "\n" not in message
    assert not index_of(project).exists()


@pytest.mark.parametrize(
    ("matrix", "problem"),
    [
        (np.ones((39, 32), dtype=np.float32), "holds 39 rows, but the corpus has 40 documents"),
        (np.ones(40 * 32, dtype=np.float32), "holds a 1-D float32 array"),
        (np.ones((40, 32), dtype=np.int64), "holds a 2-D int64 array"),
        (np.ones((40, 16), dtype=np.float32), "holds 16-dimensional rows, but the model gives 32"),
        (
            np.where(np.arange(40)[:, None] == 7, np.nan, np.ones((40, 32))).astype(np.float32),
            "holds NaN or infinity in row 7",
        ),
    ],
    ids=["rows", "1-D", "int", "dimension", "nan"],
)
def test_retriever_index_refuses_embeddings_that_do_not_fit(project: Path, matrix: np.ndarray, problem: str) -> None:
    npy = npy_of(project)
    npy.parent.mkdir()
    np.save(npy, matrix)
    with pytest.raises(NeedleError) as caught:
        index_from_embeddings(project, {"overwrite": True})
    message = str(caught.value)
    assert message.startswith(f"embedding_path {npy} {problem}")
    assert message.endswith(f"; {REEMBED} to encode the corpus again")
    assert not index_of(project).exists()
    assert not Path(f"{npy}.json").exists()  # not adopted


def test_float16_embeddings_are_indexed_as_float32(project: Path, tiny_model: str) -> None:
    rows = ultrarag_embeddings(tiny_model, corpus_contents(project), npy_of(project), dtype="float16")
    index_from_embeddings(project, {})
    stored = np.load(npy_of(project))
    assert stored.dtype == np.float32  # rewritten as the embedders read it, with its fingerprint
    np.testing.assert_array_equal(stored, rows.astype(np.float16).astype(np.float32))
    assert top_ids(project, index_of(project), QUERY) == exact_ids(project, stored, tiny_model, QUERY)


def test_needle_embeddings_of_another_model_are_refused_not_re_encoded(project: Path, tiny_model: str) -> None:
    embed_with_config(project, {})
    before = npy_of(project).read_bytes()
    other = project.parent / "other-model"
    shutil.copytree(tiny_model, other)
    with pytest.raises(NeedleError) as caught:
        index_from_embeddings(project, {"model_name_or_path": str(other)})
    message = str(caught.value)
    assert message.startswith(f"embedding_path {npy_of(project)} was embedded for something else: model: file has")
    assert message.endswith(f"; {REEMBED} to encode the corpus again")
    assert npy_of(project).read_bytes() == before
    assert not index_of(project).exists()


def test_bm25_index_builds_at_save_path(project: Path) -> None:
    bm25 = project.parent / "index" / "bm25"
    assert bm25_with_config(project, {}) == f"indexed 40 documents (bm25) into {bm25}"
    assert top_ids(project, bm25, "Abstract Base Classes, PEP 3119")[0] == "abc-0"
    assert not npy_of(project).exists()  # BM25 needs no embeddings


def test_dense_tools_on_a_bm25_backend(project: Path) -> None:
    assert embed_with_config(project, {"backend": "bm25"}).startswith("backend bm25 has no embeddings")
    with pytest.raises(NeedleError, match="retriever_index builds a dense index, but backend is bm25: build it with"):
        index_from_embeddings(project, {"backend": "bm25"})


def test_retriever_embed_failures_leave_the_file_there_unchanged(project: Path, tmp_path: Path) -> None:
    npy = npy_of(project)
    npy.parent.mkdir()
    np.save(npy, np.zeros((40, 32), dtype=np.float32))
    before = npy.read_bytes()
    missing = tmp_path / "no-such-model"
    with pytest.raises(NeedleError, match=f"^model_name_or_path {missing}: cannot load it"):
        embed_with_config(project, {"overwrite": True, "model_name_or_path": str(missing)})
    corpus = project.parent / "data" / "corpus_example.jsonl"
    corpus.write_text(corpus.read_text() + '{"id": "x", "contents": 7}\n')
    with pytest.raises(NeedleError, match=f"{corpus}, line 41: field 'contents' must be a string"):
        embed_with_config(project, {"overwrite": True})
    assert npy.read_bytes() == before
    assert sorted(p.name for p in npy.parent.iterdir()) == ["embedding.npy"]
