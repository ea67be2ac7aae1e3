"""The image embedder counts each encoded batch on ``progress_callback``, as the text document embedder does.

The model is the tiny untrained CLIP of tests/support/clip.py (random weights are enough to encode images).
"""

import io
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import ByteStream

from components.embedders.sentence_transformers_image_embedder import SentenceTransformersImageEmbedder
from tests.support.clip import PAIRS, build_clip, toy_image


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Directory of a random tiny CLIP (a sentence-transformers model directory)."""
    root = tmp_path_factory.mktemp("clip")
    return str(build_clip(root / "hf", root / "st"))


def image_documents() -> list[Document]:
    """One Document per toy colour, its PNG bytes as blob."""
    documents = []
    for colour in PAIRS:
        png = io.BytesIO()
        toy_image(colour).save(png, format="PNG")
        documents.append(Document(id=colour, blob=ByteStream(png.getvalue(), mime_type="image/png")))
    return documents


def test_each_encoded_batch_is_counted_and_a_reused_file_encodes_none(clip_dir: str, tmp_path: Path) -> None:
    npy = str(tmp_path / "images.npy")
    embedder = SentenceTransformersImageEmbedder(model=clip_dir, batch_size=4, embedding_path=npy, progress_bar=False)
    reported: list[int] = []
    embedder.progress_callback = reported.append
    embedder.warm_up()
    assert len(embedder.run(documents=image_documents())["documents"]) == len(PAIRS)
    assert reported == [4, 2]  # six images, batches of four
    again = SentenceTransformersImageEmbedder(model=clip_dir, batch_size=4, embedding_path=npy, progress_bar=False)
    again.progress_callback = reported.append
    assert len(again.run(documents=image_documents())["documents"]) == len(PAIRS)
    assert reported == [4, 2]  # the embeddings were read from the file: nothing encoded, nothing counted
    assert "progress_callback" not in again.to_dict()["init_parameters"]  # run-time wiring, never serialized
