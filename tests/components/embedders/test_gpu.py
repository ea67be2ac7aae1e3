"""The GPU paths of the sentence-transformers embedders, run where CUDA is present (skipped everywhere else).

`gpu_ids=[0]` must put the model on ``cuda:0`` and give the embeddings the CPU gives (same seeded model), for
queries, query batches and a corpus written to an embedding file; a pipeline saved with `gpu_ids` loads back
onto the GPU, and one saved without it (the device resolved on this machine) does not pin a GPU for others.
"""

from pathlib import Path

import numpy as np
import pytest
import torch
from haystack import Document
from haystack.utils import ComponentDevice

from components.embedders.sentence_transformers_batch_text_embedder import SentenceTransformersBatchTextEmbedder
from components.embedders.sentence_transformers_document_embedder import SentenceTransformersDocumentEmbedder
from components.embedders.sentence_transformers_text_embedder import SentenceTransformersTextEmbedder
from needle_retrieval.ultrarag.embedder_spec import embedder_spec
from tests.support.tiny_bert import build_bert

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

WORDS = "the a of to parse read write zip archive thread command line argument run function file json".split()  # noqa: SIM905
TEXTS = ["parse the command line", "read and write a zip archive", "run a function in a thread", "json file"]
CPU = ComponentDevice.from_str("cpu")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_bert(tmp_path_factory.mktemp("gpu-model") / "bert", WORDS, layers=2, hidden=64, heads=4))


def _device_of(embedder: SentenceTransformersTextEmbedder | SentenceTransformersDocumentEmbedder) -> str:
    backend = embedder.embedding_backend
    assert backend is not None
    return str(backend.model.device)


def test_text_embedder_runs_on_the_first_gpu_and_matches_the_cpu(model_dir: str) -> None:
    gpu = SentenceTransformersTextEmbedder(model=model_dir, gpu_ids=[0], normalize_embeddings=True)
    cpu = SentenceTransformersTextEmbedder(model=model_dir, device=CPU, normalize_embeddings=True)
    gpu.warm_up()
    cpu.warm_up()
    assert _device_of(gpu) == "cuda:0"
    for text in TEXTS:
        np.testing.assert_allclose(gpu.run(text=text)["embedding"], cpu.run(text=text)["embedding"], atol=1e-4)


def test_batch_embedder_on_the_gpu_keeps_query_order_and_values(model_dir: str) -> None:
    gpu = SentenceTransformersBatchTextEmbedder(model=model_dir, gpu_ids=[0], normalize_embeddings=True)
    cpu = SentenceTransformersBatchTextEmbedder(model=model_dir, device=CPU, normalize_embeddings=True)
    on_gpu = np.asarray(gpu.run(texts=TEXTS)["embeddings"])
    on_cpu = np.asarray(cpu.run(texts=TEXTS)["embeddings"])
    assert on_gpu.shape == (len(TEXTS), 64)
    np.testing.assert_allclose(on_gpu, on_cpu, atol=1e-4)


def test_document_embedder_writes_the_cpu_embedding_file_from_the_gpu(model_dir: str, tmp_path: Path) -> None:
    documents = [Document(id=str(i), content=text) for i, text in enumerate(TEXTS * 50)]
    paths = {name: tmp_path / f"{name}.npy" for name in ("gpu", "cpu")}
    gpu = SentenceTransformersDocumentEmbedder(
        model=model_dir, gpu_ids=[0], embedding_path=str(paths["gpu"]), normalize_embeddings=True, progress_bar=False
    )
    cpu = SentenceTransformersDocumentEmbedder(
        model=model_dir, device=CPU, embedding_path=str(paths["cpu"]), normalize_embeddings=True, progress_bar=False
    )
    out = gpu.run(documents=documents)["documents"]
    cpu.run(documents=documents)
    assert _device_of(gpu) == "cuda:0"
    np.testing.assert_allclose(np.load(paths["gpu"]), np.load(paths["cpu"]), atol=1e-4)
    assert [d.id for d in out] == [d.id for d in documents]
    assert all(d.embedding is None for d in documents)


def test_gpu_ids_survive_serialization_and_load_back_on_the_gpu(model_dir: str) -> None:
    data = SentenceTransformersTextEmbedder(model=model_dir, gpu_ids=[0]).to_dict()
    assert data["init_parameters"]["gpu_ids"] == [0]
    again = SentenceTransformersTextEmbedder.from_dict(data)
    again.warm_up()
    assert _device_of(again) == "cuda:0"


def test_a_pipeline_written_on_a_gpu_machine_pins_the_gpu_only_when_asked(model_dir: str) -> None:
    unpinned = embedder_spec("sentence_transformers", model_dir).query_embedder()
    assert "device" not in unpinned["init_parameters"]  # resolved again wherever the file is loaded
    pinned = embedder_spec("sentence_transformers", model_dir, gpu_ids=[0]).query_embedder()
    assert pinned["init_parameters"]["gpu_ids"] == [0]
    assert pinned["init_parameters"]["device"]["device"] == "cuda:0"
