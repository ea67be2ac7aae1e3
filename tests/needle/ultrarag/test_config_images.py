"""A parameter file with `is_multimodal: true` builds its image index with the file's `batch_size`, through
`needle index --config` (and its --batch-size) and through the MCP tool `retriever_embed(is_multimodal=True)`.

The batch size shows where a user sees it: the plain progress lines of the encode, one per batch of images
(``NEEDLE_PROGRESS_INTERVAL=0``: a line for every batch). The model is a tiny untrained CLIP built here
(tests/support/clip.py); six toy images, so the template's own batch of 32 encodes them in one batch.
"""

import asyncio
import json
import re
from pathlib import Path

import pytest
import yaml

from needle.cli import main
from needle.index.manifest import IndexManifest
from needle.progress import INTERVAL_VARIABLE
from needle.serve.mcp import mcp_server
from needle.serve.mcp_stdio import ConfiguredIndex, add_index_tools
from needle.serve.mcp_tools import IndexTools
from tests.support.clip import PAIRS, build_clip, toy_image
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
    """UltraRAG HEAD's file turned multimodal (the CLIP model, `batch_size: 2`) beside an image corpus; progress
    lines for every batch."""
    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
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
