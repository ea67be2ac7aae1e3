"""A parameter file with `is_multimodal: true` builds its image index with the file's embedder settings, through
`needle index --config` (and its --batch-size) and through the MCP tool `retriever_embed(is_multimodal=True)`.

The batch size shows where a user sees it: the plain progress lines of the encode, one per batch of images
(``NEEDLE_PROGRESS_INTERVAL=0``: a line for every batch). ``normalize_embeddings`` shows in the vectors' norms and
in the scores of a search, which must embed its queries as the images were (UltraRAG's retriever normalises both
by that one setting). ``gpu_ids`` is checked and warned about as for a text index; with a GPU it reaches the
image and query embedders. The model is a tiny untrained CLIP built here (tests/support/clip.py); six toy images,
so the template's own batch of 32 encodes them in one batch.
"""

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from sentence_transformers import SentenceTransformer

from needle_retrieval.cli import main
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.progress import INTERVAL_VARIABLE
from needle_retrieval.serve.mcp import mcp_server
from needle_retrieval.serve.mcp_stdio import ConfiguredIndex, add_index_tools
from needle_retrieval.serve.mcp_tools import IndexTools
from tests.support.clip import PAIRS, build_clip, toy_image
from tests.support.integrity import live
from tests.support.paths import DATA

IMAGES = len(PAIRS)
ENCODED = re.compile(r"needle: indexing \(images\): encoding (\d+)/(\d+) docs .*")


@pytest.fixture(scope="module")
def clip_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny untrained CLIP (a sentence-transformers model directory)."""
    root = tmp_path_factory.mktemp("clip")
    return build_clip(root / "hf", root / "clip")


@pytest.fixture
def image_config(tmp_path: Path, clip_model: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """UltraRAG HEAD's file turned multimodal (the CLIP model, `batch_size: 2`) beside an image corpus, run from
    its directory (its paths are relative to the working directory, as UltraRAG's); progress lines for every
    batch."""
    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "img").mkdir(parents=True)
    rows = []
    for colour in PAIRS:
        toy_image(colour).save(tmp_path / "data" / "img" / f"{colour}.png")
        rows.append(json.dumps({"id": colour, "image_path": f"img/{colour}.png"}) + "\n")
    (tmp_path / "data" / "corpus_example.jsonl").write_text("".join(rows), encoding="utf-8")
    data = yaml.safe_load((DATA / "ultrarag_parameter.yaml").read_text(encoding="utf-8"))
    data |= {"model_name_or_path": str(clip_model), "is_multimodal": True, "batch_size": 2, "gpu_ids": None}
    path = tmp_path / "parameter.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def encoded_counts(err: str) -> list[int]:
    """The images done on each encode progress line of ERR, in order (each line's total checked)."""
    found = [match.groups() for line in err.splitlines() if (match := ENCODED.fullmatch(line))]
    assert found, err
    assert all(int(total) == IMAGES for _, total in found), err
    return [int(done) for done, _ in found]


def test_the_files_batch_size_reaches_the_image_embedder(
    image_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "--config", str(image_config)]) == 0
    assert encoded_counts(capsys.readouterr().err) == [2, 4, 6]
    assert IndexManifest.load(image_config.parent / "index" / "index.index").multimodal is True


def test_batch_size_flag_replaces_the_files_for_images(image_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "--config", str(image_config), "--batch-size", "4"]) == 0
    assert encoded_counts(capsys.readouterr().err) == [4, 6]


def test_retriever_embed_is_multimodal_uses_the_files_batch_size(
    image_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The MCP tool on a text file (`is_multimodal: false`) asked for images builds with the file's batch_size."""
    data = yaml.safe_load(image_config.read_text(encoding="utf-8"))
    image_config.write_text(yaml.safe_dump(data | {"is_multimodal": False, "batch_size": 3}), encoding="utf-8")
    index = ConfiguredIndex(image_config)
    server = mcp_server(IndexTools(open=index.open), None)
    add_index_tools(server, index)
    result = asyncio.run(server.call_tool("retriever_embed", {"is_multimodal": True}))
    assert not getattr(result, "is_error", False), result
    assert encoded_counts(capsys.readouterr().err) == [3, 6]


def edited(config: Path, **keys: Any) -> Path:
    """CONFIG rewritten with top-level KEYS replaced and, for `normalize`, the sentence_transformers encode block's
    normalize_embeddings set; returns CONFIG."""
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    if "normalize" in keys:
        encode = data["backend_configs"]["sentence_transformers"]["sentence_transformers_encode"]
        encode["normalize_embeddings"] = keys.pop("normalize")
    config.write_text(yaml.safe_dump(data | keys), encoding="utf-8")
    return config


def searched(where: Path, query: str, capsys: pytest.CaptureFixture[str], config: bool = False) -> dict[str, float]:
    """`needle search WHERE QUERY` over every image (WHERE an index: its own record; with CONFIG a parameter file,
    `needle search --config WHERE`): id -> score."""
    capsys.readouterr()
    # An index records the file's trust_remote_code; searched without the file, the user allows the model by name.
    trust = [] if config else ["--trust-remote-code", str(IndexManifest.load(where).model)]
    assert (
        main(["search", *(["--config"] if config else []), str(where), query, "--json", "--top-k", str(IMAGES), *trust])
        == 0
    )
    return {hit["id"]: hit["score"] for hit in json.loads(capsys.readouterr().out)[0]}


@pytest.mark.parametrize("normalize", [False, True])
def test_the_files_normalize_embeddings_reaches_the_images_and_their_queries(
    image_config: Path, clip_model: Path, capsys: pytest.CaptureFixture[str], normalize: bool
) -> None:
    assert main(["index", "--config", str(edited(image_config, normalize=normalize))]) == 0
    index = image_config.parent / "index" / "index.index"
    vectors = np.load(live(index) / "embeddings.npy")
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5) is normalize, norms
    query = "red square"
    embedded = SentenceTransformer(str(clip_model)).encode([query], normalize_embeddings=normalize)[0]
    expected = dict(zip(PAIRS, (vectors @ embedded).tolist(), strict=True))
    assert searched(index, query, capsys) == pytest.approx(expected, rel=1e-4, abs=1e-5)
    assert searched(image_config, query, capsys, config=True) == pytest.approx(expected, rel=1e-4, abs=1e-5)
    saved = yaml.safe_load((live(index) / "dense_search.yaml").read_text(encoding="utf-8"))
    params = saved["components"]["embedder"]["init_parameters"]
    assert (params["normalize_embeddings"], params["trust_remote_code"]) == (normalize, True)  # the file's


def test_a_gpu_ids_value_the_text_path_refuses_is_refused_alike_for_images(
    image_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    errors = []
    for multimodal in (False, True):
        edited(image_config, gpu_ids="first", is_multimodal=multimodal)
        capsys.readouterr()
        assert main(["index", "--config", str(image_config)]) == 2
        errors.append(capsys.readouterr().err)
    assert (
        errors[0]
        == errors[1]
        == f"needle: error: {image_config}: gpu_ids must list GPU numbers such as \"0,1\", got 'first'\n"
    )


def test_a_gpu_this_machine_lacks_is_warned_about_as_for_text_and_the_images_still_build(
    image_config: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    absent = torch.cuda.device_count()
    assert main(["index", "--config", str(edited(image_config, gpu_ids=str(absent)))]) == 0
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.getMessage().startswith("gpu")]
    instead = "the CPU" if absent == 0 else "the default device"
    assert said == [f"gpu_ids: GPU {absent} is not available on this machine ({absent} CUDA devices); using {instead}"]
    assert set(searched(image_config.parent / "index" / "index.index", "blue triangle", capsys)) == set(PAIRS)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_ids_put_the_image_and_query_embedders_on_that_gpu(
    image_config: Path, clip_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "--config", str(edited(image_config, gpu_ids="0", normalize=True))]) == 0
    index = image_config.parent / "index" / "index.index"
    saved = yaml.safe_load((live(index) / "dense_search.yaml").read_text(encoding="utf-8"))
    params = saved["components"]["embedder"]["init_parameters"]
    assert (params["gpu_ids"], params["device"]) == ([0], {"type": "single", "device": "cuda:0"})
    on_cpu = SentenceTransformer(str(clip_model), device="cpu")
    images = on_cpu.encode([toy_image(colour) for colour in PAIRS], normalize_embeddings=True)
    assert np.allclose(np.load(live(index) / "embeddings.npy"), images, atol=1e-4)  # the GPU's vectors, as the CPU's
    assert set(searched(index, "green circle", capsys)) == set(PAIRS)
