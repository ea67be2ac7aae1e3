"""Multimodal corpora (issue 10, item 3): image lines, a CLIP-style model, text queries that find images.

A tiny CLIP is built from a config and trained here (tests/support/clip.py), loaded through
``SentenceTransformer(dir)`` like any user model, and driven through the real reader, embedder, FAISS store,
YAML pipelines and ``needle`` command.
"""

import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from haystack import Document, Pipeline
from haystack.dataclasses import ByteStream
from haystack.utils import ComponentDevice
from sentence_transformers import SentenceTransformer

from components.converters.jsonl_image_corpus_reader import JSONLImageCorpusReader
from components.converters.jsonl_lines import CorpusFormatError
from components.embedders.embedding_file import EmbeddingFileError
from components.embedders.sentence_transformers_image_embedder import (
    ImageEmbeddingError,
    SentenceTransformersImageEmbedder,
)
from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.images import INDEX_TEMPLATE, check_multimodal_options, set_image_embedder
from needle_retrieval.pipelines import files as pf
from needle_retrieval.progress import INTERVAL_VARIABLE
from needle_retrieval.ultrarag.embedder_spec import embedder_spec
from tests.support.clip import PAIRS, build_clip, pair_accuracy, toy_image, train_clip
from tests.support.integrity import edit_manifest


@pytest.fixture(scope="session")
def clip_training(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """(directory of the trained tiny CLIP, how many toy pairs the untrained model matched)."""
    root = tmp_path_factory.mktemp("clip")
    untrained = SentenceTransformer(str(build_clip(root / "hf", root / "untrained")))
    before = pair_accuracy(untrained)
    train_clip(untrained)
    untrained.save(str(root / "trained"))
    return str(root / "trained"), before


@pytest.fixture(scope="session")
def clip_dir(clip_training: tuple[str, int]) -> str:
    """Directory of the trained tiny CLIP (a sentence-transformers model directory)."""
    return clip_training[0]


def write_corpus(directory: Path, lines: list[dict[str, object]]) -> Path:
    """Write CORPUS.jsonl with LINES into DIRECTORY and the toy images into DIRECTORY/img."""
    (directory / "img").mkdir(parents=True, exist_ok=True)
    for colour in PAIRS:
        toy_image(colour).save(directory / "img" / f"{colour}.png")
    corpus = directory / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return corpus


def toy_lines() -> list[dict[str, object]]:
    """One line per toy image; the last has no caption (captions are optional)."""
    lines: list[dict[str, object]] = [
        {"id": colour, "image_path": f"img/{colour}.png", "contents": caption} for colour, caption in PAIRS.items()
    ]
    del lines[-1]["contents"]
    return lines


def live_generation(index_dir: Path) -> Path:
    """The generation directory CURRENT points at."""
    return index_dir / (index_dir / "CURRENT").read_text(encoding="utf-8").strip()


@pytest.fixture(scope="session")
def image_index(clip_dir: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index built by `needle index --multimodal` over the toy corpus with the trained CLIP."""
    root = tmp_path_factory.mktemp("image_index")
    corpus = write_corpus(root / "corpus", toy_lines())
    assert main(["index", str(corpus), "--out", str(root / "out"), "--multimodal", "--model", clip_dir]) == 0
    return root / "out"


def test_training_pairs_each_image_with_its_own_caption(clip_training: tuple[str, int]) -> None:
    path, before = clip_training
    assert before < len(PAIRS), "the untrained model already matches every pair: the check below proves nothing"
    assert pair_accuracy(SentenceTransformer(path)) == len(PAIRS)


def test_reader_makes_image_documents(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path, [*toy_lines(), {"image_path": "img/red.png", "title": "again"}])
    docs = JSONLImageCorpusReader().run(path=str(corpus))["documents"]
    assert [d.id for d in docs] == [*PAIRS, "7"]
    assert docs[0].content == "red square"
    assert docs[5].content is None
    assert docs[0].meta["image_path"] == str((tmp_path / "img" / "red.png").resolve())
    assert docs[6].meta == {"title": "again", "image_path": docs[0].meta["image_path"], "corpus_line": 7}
    assert all(d.blob is None for d in docs)


@pytest.mark.parametrize(
    ("image_path", "problem"),
    [
        ("img/missing.png", "image not found: 'img/missing.png'"),
        ("img/bad.png", "not a readable image: 'img/bad.png'"),
        ("img/text.png", "not a readable image: 'img/text.png'"),
        ("img", "not a readable image: 'img'"),
        ("/etc/hostname", "must be relative to the corpus directory"),
        ("../outside.png", "leads outside the corpus directory"),
        ("img/link.png", "leads outside the corpus directory"),
        ("", "must not be empty"),
    ],
)
def test_reader_names_line_and_path_of_a_bad_image(tmp_path: Path, image_path: str, problem: str) -> None:
    corpus = write_corpus(tmp_path / "c", [toy_lines()[0], {"id": "x", "image_path": image_path}])
    (tmp_path / "c" / "img" / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really a png")
    (tmp_path / "c" / "img" / "text.png").write_text("hello, not an image")
    toy_image("red").save(tmp_path / "outside.png")
    os.symlink(tmp_path / "outside.png", tmp_path / "c" / "img" / "link.png")
    with pytest.raises(CorpusFormatError, match=rf"corpus\.jsonl, line 2: .*{problem}") as raised:
        JSONLImageCorpusReader().run(path=str(corpus))
    assert raised.value.line == 2


def test_reader_requires_image_path(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path, [{"id": "a", "contents": "text only"}])
    with pytest.raises(CorpusFormatError, match=r"line 1: missing text field 'image_path'"):
        JSONLImageCorpusReader().run(path=str(corpus))


def test_embedder_reads_blob_or_file_alike_and_keeps_the_npy(clip_dir: str, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path, toy_lines())
    docs = JSONLImageCorpusReader().run(path=str(corpus))["documents"]
    npy = tmp_path / "emb.npy"
    embedder = SentenceTransformersImageEmbedder(model=clip_dir, normalize_embeddings=True, embedding_path=str(npy))
    embedder.warm_up()
    from_files = embedder.run(documents=docs)["documents"]
    assert np.load(npy).shape == (len(PAIRS), 16)
    blobs = [
        Document(id=d.id, blob=ByteStream(Path(d.meta["image_path"]).read_bytes(), mime_type="image/png")) for d in docs
    ]
    in_memory = SentenceTransformersImageEmbedder(model=clip_dir, normalize_embeddings=True, batch_size=4)
    from_blobs = in_memory.run(documents=blobs)["documents"]
    np.testing.assert_allclose([d.embedding for d in from_blobs], [d.embedding for d in from_files], atol=1e-5)
    assert from_files[0].meta["embedding_source"]["type"] == "image"
    assert docs[0].embedding is None  # new Documents out
    toy_image("black").save(tmp_path / "img" / "red.png")  # an image changed: the kept file no longer fits
    with pytest.raises(EmbeddingFileError, match="the embedded inputs differ"):
        embedder.run(documents=docs)


def test_embedder_errors(clip_dir: str, minilm_path: str, tmp_path: Path) -> None:
    embedder = SentenceTransformersImageEmbedder(model=clip_dir)
    doc = Document(id="d1", meta={"image_path": str(tmp_path / "gone.png"), "corpus_line": 3})
    with pytest.raises(ImageEmbeddingError, match=r"document 'd1', image '.*gone\.png', corpus line 3: cannot read"):
        embedder.run(documents=[doc])
    broken = Document(id="d2", blob=ByteStream(b"not an image"))
    with pytest.raises(ImageEmbeddingError, match="document 'd2': not a readable image"):
        embedder.run(documents=[broken])
    with pytest.raises(ImageEmbeddingError, match="has no image"):
        embedder.run(documents=[Document(id="d3", content="text")])
    with pytest.raises(ValueError, match="batch_size must be an integer in"):
        SentenceTransformersImageEmbedder(model=clip_dir, batch_size=0)
    with pytest.raises(ValueError, match="cannot embed images"):
        SentenceTransformersImageEmbedder(model=minilm_path).warm_up()


def test_embedder_serializes(clip_dir: str) -> None:
    embedder = SentenceTransformersImageEmbedder(model=clip_dir, embedding_path="x.npy", overwrite=True, batch_size=8)
    data = embedder.to_dict()
    again = SentenceTransformersImageEmbedder.from_dict(data)
    assert again.to_dict() == data
    assert data["init_parameters"]["embedding_path"] == "x.npy"
    assert data["init_parameters"]["file_path_meta_field"] == "image_path"


def test_cli_text_query_finds_its_image(image_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = json.loads((live_generation(image_index) / "manifest.json").read_text())
    assert manifest["multimodal"] is True
    assert manifest["modes"] == ["dense"]
    capsys.readouterr()
    captions = list(PAIRS.values())
    assert main(["search", str(image_index), *captions, "--json", "--top-k", "3"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [hits[0]["id"] for hits in results] == list(PAIRS)
    assert results[0][0] == {"id": "red", "score": pytest.approx(results[0][0]["score"]), "content": "red square"}
    assert results[-1][0]["content"] is None


def test_image_search_yaml_answers_one_query(image_index: Path, clip_dir: str) -> None:
    data = pf.load_template("image_search")
    pf.set_init_param(data, "embedder.model", clip_dir)
    pf.set_init_param(data, "retriever.document_store.path", str(live_generation(image_index) / "dense"))
    pipeline = Pipeline.loads(yaml.safe_dump(pf.build(data).to_dict()))
    docs = pipeline.run({"embedder": {"text": "blue triangle"}})["retriever"]["documents"]
    assert docs[0].id == "blue"
    assert Path(docs[0].meta["image_path"]).name == "blue.png"
    saved = yaml.safe_load((live_generation(image_index) / "dense_search.yaml").read_text())
    assert "jsonl" not in json.dumps(saved)
    assert saved["components"]["embedder"]["init_parameters"]["model"] == clip_dir


def test_cli_refuses_other_modes_and_options(
    image_index: Path, clip_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["search", str(image_index), "red square", "--mode", "bm25"]) == 2
    err = capsys.readouterr().err
    assert "multimodal (image) index: it answers --mode dense only, not bm25" in err
    assert err.count("\n") == 1
    corpus = write_corpus(tmp_path, toy_lines())
    assert main(["index", str(corpus), "--out", str(tmp_path / "o"), "--multimodal", "--bm25"]) == 2
    assert "--multimodal builds a dense image index only" in capsys.readouterr().err


def test_cli_missing_image_names_the_line(clip_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path, [*toy_lines(), {"id": "gone", "image_path": "img/gone.png"}])
    capsys.readouterr()
    assert main(["index", str(corpus), "--out", str(tmp_path / "o"), "--multimodal", "--model", clip_dir]) == 2
    err = capsys.readouterr().err
    assert f"{corpus}, line 7: image not found: 'img/gone.png'" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "o" / "CURRENT").exists()


@pytest.mark.parametrize("value", ["yes", None, 1])
def test_tampered_multimodal_field_is_one_line(
    image_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], value: object
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(image_index, copy)
    edit_manifest(live_generation(copy) / "manifest.json", lambda manifest: manifest.update(multimodal=value))
    capsys.readouterr()
    assert main(["search", str(copy), "red square"]) == 2
    err = capsys.readouterr().err
    assert "corrupted index manifest" in err
    assert f"multimodal must be true or false, got {value!r}" in err
    assert err.count("\n") == 1


def test_rebuild_carries_the_image_embeddings(
    image_index: Path, clip_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(image_index, copy)
    before = live_generation(copy)
    corpus = image_index.parent / "corpus" / "corpus.jsonl"
    assert main(["index", str(corpus), "--out", str(copy), "--multimodal", "--model", clip_dir]) == 0
    after = live_generation(copy)
    assert after != before
    assert os.path.samefile(before / "embeddings.npy", after / "embeddings.npy")  # linked in, fingerprint matched
    capsys.readouterr()
    assert main(["search", str(copy), "yellow star", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0][0]["id"] == "yellow"


def test_batch_size_flag_sets_the_images_per_encode_batch(
    clip_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--multimodal --batch-size 4`: the progress lines (one per batch with a zero interval) count 4, then 6."""
    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
    corpus = write_corpus(tmp_path / "corpus", toy_lines())
    args = ["index", str(corpus), "--out", str(tmp_path / "o"), "--multimodal", "--model", clip_dir]
    assert main([*args, "--batch-size", "4"]) == 0
    err = capsys.readouterr().err
    counts = [line.split("encoding ")[1].split(" docs")[0] for line in err.splitlines() if "(images): encoding" in line]
    assert counts == ["4/6", "6/6"], err


def test_cli_image_index_keeps_the_templates_normalised_embedders(image_index: Path) -> None:
    """No parameter file: no embedder recorded, unit image vectors, queries normalised by the template."""
    generation = live_generation(image_index)
    assert "embedder" not in json.loads((generation / "manifest.json").read_text())
    np.testing.assert_allclose(np.linalg.norm(np.load(generation / "embeddings.npy"), axis=1), 1.0, atol=1e-5)
    saved = yaml.safe_load((generation / "dense_search.yaml").read_text())
    assert saved["components"]["embedder"]["init_parameters"]["normalize_embeddings"] is True


def image_embedder_of(recorded: dict[str, object] | None) -> SentenceTransformersImageEmbedder:
    """The image embedder that image_index.yaml builds with the settings of the RECORDED spec (not warmed up)."""
    data = pf.load_template(INDEX_TEMPLATE)
    set_image_embedder(data, recorded)
    embedder = pf.build(data).get_component("embedder")
    assert isinstance(embedder, SentenceTransformersImageEmbedder)
    return embedder


def test_a_recorded_spec_sets_the_image_embedders_model_batch_normalisation_trust_and_gpu(clip_dir: str) -> None:
    block = {"trust_remote_code": True, "sentence_transformers_encode": {"normalize_embeddings": False}}
    spec = embedder_spec("sentence_transformers", clip_dir, block, batch_size=3, gpu_ids=[0])
    embedder = image_embedder_of(spec.recorded())
    assert (embedder.model, embedder.batch_size) == (clip_dir, 3)
    assert (embedder.normalize_embeddings, embedder.trust_remote_code) == (False, True)
    assert embedder.device == ComponentDevice.from_str("cuda:0")  # gpu_ids' first GPU, as the text embedders
    default = image_embedder_of(embedder_spec("sentence_transformers", clip_dir).recorded())
    assert (default.normalize_embeddings, default.trust_remote_code) == (True, False)  # the text path's defaults
    assert default.device == ComponentDevice.resolve_device(None)  # no gpu_ids: the machine's best device


def test_more_than_one_gpu_for_images_is_one_warning(clip_dir: str, caplog: pytest.LogCaptureFixture) -> None:
    spec = embedder_spec("sentence_transformers", clip_dir, gpu_ids=[1, 0])
    with caplog.at_level(logging.WARNING):
        assert image_embedder_of(spec.recorded()).device == ComponentDevice.from_str("cuda:1")
    assert [r.getMessage() for r in caplog.records] == [
        "gpu_ids: images are encoded on GPU 1 only (the image embedder has no multi-GPU pool)"
    ]


def test_a_spec_images_cannot_take_is_refused(clip_dir: str) -> None:
    prompt = embedder_spec("sentence_transformers", clip_dir, {"sentence_transformers_encode": {"psg_task": "doc"}})
    with pytest.raises(NeedleError, match=r"sentence_transformers_encode\.psg_task chooses a text prompt or task"):
        check_multimodal_options(dense=True, bm25=False, store="faiss", embedder=prompt.recorded())
    with pytest.raises(NeedleError, match="no other backend"):
        check_multimodal_options(
            dense=True, bm25=False, store="faiss", embedder=embedder_spec("openai", "m").recorded()
        )
