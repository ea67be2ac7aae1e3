"""Every retriever parameter file UltraRAG ships loads as it is: a stock project runs on needle unchanged.

tests/data/ultrarag_parameter.yaml (UltraRAG HEAD's keys and structure) always; with ULTRARAG_SRC pointing at an
UltraRAG checkout, also its servers/retriever/parameter.yaml and the `retriever:` section of each merged file
under examples/**/parameter/ (one block per server, what `ultrarag build` writes). Each is loaded from a fresh
working directory, as UltraRAG's client starts the server from the project root.
"""

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from needle_retrieval.ultrarag.config import load_config
from tests.support.paths import DATA

SECRETS = ("RETRIEVER_API_KEY", "OPENAI_API_KEY", "MILVUS_TOKEN", "EXA_API_KEY", "TAVILY_API_KEY", "ZHIPUAI_API_KEY")
SOURCE = os.environ.get("ULTRARAG_SRC")


def shipped() -> list[Any]:
    """(name, retriever parameters) of every retriever file under $ULTRARAG_SRC; one skipped entry without it."""
    if not SOURCE:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason="ULTRARAG_SRC (an UltraRAG checkout) not set"))]
    root = Path(SOURCE)
    found = [
        ("servers/retriever/parameter.yaml", yaml.safe_load((root / "servers/retriever/parameter.yaml").read_text()))
    ]
    for merged in sorted(root.glob("examples/**/parameter/*.yaml")):
        section = (yaml.safe_load(merged.read_text()) or {}).get("retriever")
        if section is not None:
            found.append((str(merged.relative_to(root)), section))
    return [pytest.param(name, data, id=name) for name, data in found]


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No key variables set (a file's literal key is moved into one, removed afterwards); run from TMP_PATH."""
    for name in SECRETS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_the_head_shaped_file_loads_with_no_key_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = load_config(DATA / "ultrarag_parameter.yaml")
    assert (config.spec.backend, config.target.store, config.target.collection) == (
        "sentence_transformers",
        "faiss",
        None,
    )
    assert config.corpus == tmp_path / "data" / "corpus_example.jsonl"  # from the working directory, not tests/data
    assert config.index_dir == tmp_path / "index" / "index.index"
    assert not [w for w in warnings_of(caplog) if "ignored" in w]


@pytest.mark.parametrize(("name", "data"), shipped())
def test_every_retriever_file_ultrarag_ships_loads(
    name: str, data: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "parameter.yaml"
    path.write_text(yaml.safe_dump(data))
    config = load_config(path)
    assert config.spec.backend == data.get("backend", "sentence_transformers"), name
    assert config.corpus == tmp_path / data["corpus_path"], name
    assert not [w for w in warnings_of(caplog) if "ignored" in w], name


def test_importing_the_reader_loads_no_model_library() -> None:
    """`needle mcp` lists its tools before Haystack and torch load: importing the parameter reader pulls in neither
    (checking a file does)."""
    code = "import sys, needle_retrieval.ultrarag.config; print(sorted({'haystack', 'torch'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
