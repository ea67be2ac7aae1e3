"""The corpus .npy file: layout, reuse without a model, every refusal, and pairs written and copied whole."""

import json
from pathlib import Path

import numpy as np
import pytest
from haystack import Document, Pipeline

from components.converters import JSONLCorpusReader
from components.embedders import EmbeddingFileError, SentenceTransformersDocumentEmbedder, save_embeddings
from components.embedders.embedding_file import build_fingerprint, copy_embeddings, sidecar_path

DOCS = [Document(id=f"d{i}", content=f"passage {i} about vitamin {chr(65 + i)}") for i in range(6)]


def embedder(model: str, path: Path, **options: object) -> SentenceTransformersDocumentEmbedder:
    """A document embedder writing to `path`, quiet."""
    return SentenceTransformersDocumentEmbedder(model=model, embedding_path=str(path), progress_bar=False, **options)


@pytest.fixture
def built(minilm_path: str, tmp_path: Path) -> Path:
    """An embedding file (and sidecar) built from DOCS with default options."""
    path = tmp_path / "emb.npy"
    embedder(minilm_path, path).run(documents=DOCS)
    return path


def test_file_is_float32_one_row_per_document_with_a_fingerprint(minilm_path: str, tmp_path: Path) -> None:
    path = tmp_path / "sub" / "emb.npy"
    out = embedder(minilm_path, path, prompt_name=None).run(documents=DOCS)["documents"]
    matrix = np.load(path)
    assert matrix.dtype == np.float32
    assert matrix.shape == (6, 384)
    np.testing.assert_array_equal(matrix, np.array([d.embedding for d in out], dtype=np.float32))
    record = json.loads(sidecar_path(path).read_text())
    assert (record["model"], record["count"], record["dim"], record["normalize_embeddings"]) == (
        minilm_path,
        6,
        384,
        False,
    )
    assert sorted(p.name for p in path.parent.iterdir()) == ["emb.npy", "emb.npy.json"]


def test_matching_file_is_reused_without_loading_the_model(minilm_path: str, built: Path) -> None:
    first = np.load(built)
    reuser = embedder(minilm_path, built)
    reuser.warm_up()
    out = reuser.run(documents=DOCS)["documents"]
    assert reuser.embedding_backend is None
    np.testing.assert_array_equal(np.array([d.embedding for d in out], dtype=np.float32), first)
    assert all(d.embedding is None for d in DOCS)


def test_yaml_index_pipeline_reads_the_file_back_on_the_second_run(minilm_path: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": d.id, "title": "T", "text": d.content}) + "\n" for d in DOCS))
    pipeline = Pipeline()
    pipeline.add_component("reader", JSONLCorpusReader())
    pipeline.add_component("embedder", embedder(minilm_path, tmp_path / "emb.npy"))
    pipeline.connect("reader.documents", "embedder.documents")
    yaml_text = pipeline.dumps()
    first = Pipeline.loads(yaml_text).run({"reader": {"path": str(corpus)}})["embedder"]["documents"]
    again = Pipeline.loads(yaml_text)
    second = again.run({"reader": {"path": str(corpus)}})["embedder"]["documents"]
    assert again.get_component("embedder").embedding_backend is None
    assert [d.embedding for d in second] == [d.embedding for d in first]
    assert first[0].content == f"T\n{DOCS[0].content}"


@pytest.mark.parametrize(
    ("options", "documents", "difference"),
    [
        ({"model": "other/model"}, DOCS, "model: file has {model!r}, now 'other/model'"),
        ({"prompt_name": "passage"}, DOCS, "prompt_name: file has None, now 'passage'"),
        ({"task": "document"}, DOCS, "task: file has None, now 'document'"),
        ({"normalize_embeddings": True}, DOCS, "normalize_embeddings: file has False, now True"),
        ({"prefix": "passage: "}, DOCS, "prefix: file has '', now 'passage: '"),
        ({}, [*DOCS[:5], Document(id="d5", content="edited")], "the embedded inputs differ"),
        ({}, DOCS[::-1], "the document ids (or their order) differ"),
        ({}, DOCS[:3], "count: file has 6, now 3"),
    ],
)
def test_a_file_built_for_something_else_is_refused(
    minilm_path: str, built: Path, options: dict, documents: list[Document], difference: str
) -> None:
    stale = embedder(options.pop("model", minilm_path), built, **options)
    with pytest.raises(EmbeddingFileError) as info:
        stale.run(documents=documents)
    message = str(info.value)
    assert message.startswith(f"{built} was built for something else: ")
    assert difference.format(model=minilm_path) in message
    assert message.endswith("pass overwrite=True to rebuild it, or choose another embedding_path")
    assert stale.embedding_backend is None


def test_overwrite_rebuilds_for_the_new_corpus(minilm_path: str, built: Path) -> None:
    edited = [*DOCS[:2], Document(id="new", content="a brand new passage")]
    embedder(minilm_path, built, overwrite=True).run(documents=edited)
    assert np.load(built).shape == (3, 384)
    reuser = embedder(minilm_path, built)
    out = reuser.run(documents=edited)["documents"]
    assert reuser.embedding_backend is None
    assert len(out) == 3


def test_a_file_without_fingerprint_is_refused(minilm_path: str, tmp_path: Path) -> None:
    path = tmp_path / "seed.npy"
    np.save(path, np.zeros((6, 384), dtype=np.float32))
    with pytest.raises(EmbeddingFileError) as info:
        embedder(minilm_path, path).run(documents=DOCS)
    assert str(info.value) == (
        f"{path} has no fingerprint file seed.npy.json, so the model and corpus that built it are unknown; "
        "pass overwrite=True to rebuild it, or choose another embedding_path"
    )


def test_a_corrupt_matrix_or_sidecar_is_refused(minilm_path: str, built: Path) -> None:
    np.save(built, np.zeros((6, 10), dtype=np.float32))
    with pytest.raises(
        EmbeddingFileError,
        match=r"float32 array of shape \(6, 10\), but its fingerprint promises float32 of shape \(6, 384\)",
    ):
        embedder(minilm_path, built).run(documents=DOCS)
    built.write_bytes(b"not an npy file")
    with pytest.raises(EmbeddingFileError, match=r"is not a readable \.npy file"):
        embedder(minilm_path, built).run(documents=DOCS)
    sidecar_path(built).write_text("{truncated")
    with pytest.raises(EmbeddingFileError, match=r"emb\.npy\.json is not a readable fingerprint"):
        embedder(minilm_path, built).run(documents=DOCS)


def test_failed_encoding_leaves_no_file_behind(minilm_path: str, tmp_path: Path) -> None:
    broken = embedder(minilm_path, tmp_path / "emb.npy", encode_kwargs={"no_such_option": 1})
    with pytest.raises(ValueError, match="no_such_option"):
        broken.run(documents=DOCS)
    assert list(tmp_path.iterdir()) == []


def test_failed_rebuild_keeps_the_previous_pair_usable(minilm_path: str, built: Path) -> None:
    before = np.load(built)
    broken = embedder(minilm_path, built, overwrite=True, encode_kwargs={"no_such_option": 1})
    with pytest.raises(ValueError, match="no_such_option"):
        broken.run(documents=DOCS)
    out = embedder(minilm_path, built).run(documents=DOCS)["documents"]
    np.testing.assert_array_equal(np.array([d.embedding for d in out], dtype=np.float32), before)


def test_a_copied_pair_replaces_the_old_pair_whole(tmp_path: Path) -> None:
    """copy_embeddings takes the target's old sidecar away first: a source without one never leaves the target's
    matrix paired with the fingerprint of another (what a crash between the two copies would do too)."""
    source, target = tmp_path / "src.npy", tmp_path / "out" / "emb.npy"
    fingerprint = build_fingerprint({"model": "m"}, ["a", "b"], ["x", "y"])
    save_embeddings(source, np.ones((2, 3), dtype=np.float32), fingerprint)
    copy_embeddings(source, target)
    assert target.read_bytes() == source.read_bytes()
    assert sidecar_path(target).read_bytes() == sidecar_path(source).read_bytes()
    sidecar_path(source).unlink()
    copy_embeddings(source, target)
    assert not sidecar_path(target).exists()


def test_save_embeddings_checks_dtype_and_row_count(tmp_path: Path) -> None:
    fingerprint = build_fingerprint({"model": "m"}, ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="2-D float32 array, got 2-D float64"):
        save_embeddings(tmp_path / "e.npy", np.zeros((2, 3)), fingerprint)
    with pytest.raises(ValueError, match="embeddings have 3 rows but the fingerprint counts 2"):
        save_embeddings(tmp_path / "e.npy", np.zeros((3, 3), dtype=np.float32), fingerprint)
    assert list(tmp_path.iterdir()) == []
