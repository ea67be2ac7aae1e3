"""UltraRAG's parameter.yaml driving `needle index --config` / `needle search --config`, and the demo preset
(OpenAI-compatible embeddings from a real Infinity server + Milvus Lite)."""

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from haystack import Pipeline

import components  # noqa: F401 - registers our modules with Haystack's deserialization allowlist
from components.embedders import InfinityServer, InfinitySettings
from components.embedders.infinity_server import lease, release
from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.ultrarag.config import load_config
from tests.support.paths import DATA, INFINITY, REPO

EXAMPLE = DATA / "ultrarag_parameter.yaml"
QUERY = "compress data with bz2"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example parameter file beside data/corpus_example.jsonl (40 passages), as UltraRAG's layout has it, and
    the working directory there (the file's paths are relative to it, as UltraRAG's are)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    lines = (REPO / "samples" / "python_docs.jsonl").read_text().splitlines(True)[:40]
    (tmp_path / "data" / "corpus_example.jsonl").write_text("".join(lines))
    shutil.copy(EXAMPLE, tmp_path / "parameter.yaml")
    return tmp_path


def edited(workdir: Path, **changes: object) -> Path:
    """The parameter file with top-level keys changed (None removes one)."""
    path = workdir / "parameter.yaml"
    data = yaml.safe_load(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.integration
def test_the_seed_file_drives_index_and_search(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = workdir / "parameter.yaml"
    assert main(["index", "--config", str(config)]) == 0
    index = workdir / "index" / "index.index"  # faiss.index_path is the index directory
    manifest = IndexManifest.load(index)
    assert manifest.embedder is not None
    assert manifest.embedder["settings"]["batch_size"] == 16
    assert manifest.store_settings == {"index_chunk_size": 2000, "index_use_gpu": True}
    npy = workdir / "embedding" / "embedding.npy"  # embedding_path, relative to the working directory
    assert np.load(npy).shape == (40, 384)
    capsys.readouterr()
    assert main(["search", "--config", str(config), QUERY, "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits[0]) == 5  # top_k: 5 from the file
    assert hits[0][0]["id"] == "bz2-0"
    assert main(["search", "--config", str(config), QUERY, "--top-k", "2", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)[0]) == 2


@pytest.mark.integration
def test_bm25_backend_builds_a_bm25_index_at_save_path(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = edited(workdir, backend="bm25")
    assert main(["index", "--config", str(config)]) == 0
    manifest = IndexManifest.load(workdir / "index" / "bm25")  # bm25.save_path is the index directory
    assert (manifest.modes, manifest.bm25_lang) == (["bm25"], "en")
    capsys.readouterr()
    assert main(["search", "--config", str(config), QUERY, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0][0]["id"] == "bz2-0"


@pytest.mark.integration
def test_milvus_index_backend_drives_index_and_search(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = edited(workdir, index_backend="milvus")
    assert main(["index", "--config", str(config)]) == 0
    manifest = IndexManifest.load(workdir / "index" / "milvus_demo.db")  # milvus.uri is the index directory
    assert manifest.store == "milvus"
    assert manifest.store_settings is not None
    assert manifest.store_settings["search_params"] == {"metric_type": "IP", "params": {}}
    capsys.readouterr()
    assert main(["search", "--config", str(config), QUERY, "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits[0]) == 5
    assert hits[0][0]["id"] == "bz2-0"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"retriever_port": 1}, "option retriever_port is not supported"),
        ({"backend": "colbert"}, "backend 'colbert' is not supported"),
        ({"index_backend": "qdrant"}, "index_backend 'qdrant' is not supported"),
        (
            {"backend": "openai", "backend_configs": {"openai": {"model": "x"}}},
            "backend_configs.openai: option model is not supported",
        ),
        ({"backend": "BM25", "backend_configs": {"bm25": {"stem": True}}}, "backend_configs.bm25: option stem is not"),
        ({"index_backend": "milvus", "index_backend_configs": {"milvus": {"metric_type": "L2"}}}, "metric_type"),
        (
            {"index_backend": "milvus", "index_backend_configs": {"milvus": {"search_params": {"metric_type": "L2"}}}},
            "search_params.metric_type: a needle index uses 'IP'",
        ),
        ({"websearch_backend": "bing"}, "websearch_backend 'bing' is not supported"),
        (
            {"websearch_backend": "exa", "websearch_backend_configs": {"exa": {"region": "eu"}}},
            "websearch_backend_configs.exa: option region",
        ),
        ({"websearch_backend_configs": {"tavily": {"retries": 0}}}, "tavily.retries counts tries"),
        (
            {"websearch_backend_configs": {"zhipuai": {"base_url": "https://open.bigmodel.cn/api/paas/v4"}}},
            "zhipuai.base_url is the web_search endpoint",
        ),
        (
            {"websearch_backend_configs": {"zhipuai": {"search_recency_filter": "lastCentury"}}},
            "websearch_backend_configs.zhipuai: search_recency_filter must be one of",
        ),
        ({"retrieve_thread_num": 0}, r"retrieve_thread_num must be an integer in \[1, 64\]"),
        ({"is_multimodal": True, "backend": "openai"}, "is_multimodal: true needs backend sentence_transformers"),
        ({"top_k": 0}, r"top_k must be an integer in \[1, 10000\]"),
        ({"top_k": 20_000}, r"top_k must be an integer in \[1, 10000\], got 20000"),
        ({"embedding_path": "embedding/vectors.bin"}, "embedding_path must end with .npy"),
    ],
)
def test_unsupported_options_are_errors_naming_file_and_key(
    workdir: Path, changes: dict[str, object], message: str
) -> None:
    config = edited(workdir, **changes)
    with pytest.raises(NeedleError, match=message) as raised:
        load_config(config)
    assert str(config) in str(raised.value)


def test_cli_refuses_flags_the_file_sets(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = workdir / "parameter.yaml"
    assert main(["index", "--config", str(config), "--bm25"]) == 2
    assert "--bm25 cannot be combined with --config" in capsys.readouterr().err
    assert main(["index", "--out", str(workdir / "x")]) == 2
    assert "needs CORPUS and --out DIR (or --config parameter.yaml)" in capsys.readouterr().err


def test_a_literal_openai_key_is_used_through_the_environment_only(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("RETRIEVER_API_KEY", "")  # restored (removed) after the test, whatever load_config sets
    monkeypatch.delenv("RETRIEVER_API_KEY")
    config = load_config(edited(workdir, backend="openai"))  # the example's api_key: "sk-literal-test"
    assert "literal key" in caplog.text
    assert config.spec.api_key is not None
    assert config.spec.api_key.resolve_value() == "sk-literal-test"
    assert "sk-literal-test" not in json.dumps(config.spec.recorded())
    assert config.model == "text-embedding-3-small"


# --- the demo preset against a real Infinity server -----------------------------------------------------------------


@pytest.fixture(scope="module")
def infinity(minilm_path: str) -> Iterator[InfinityServer]:
    """A managed Infinity server serving MiniLM: the OpenAI-compatible service of the demo."""
    if not INFINITY.exists():
        pytest.skip(
            "Infinity is not installed in .venv-infinity (see tests/components/rankers/test_tei.py for the commands)"
        )
    server = lease(InfinitySettings(minilm_path, device="cpu", batch_size=4))
    server.start(timeout=240)
    yield server
    release(server)


def demo(name: str, infinity: InfinityServer, minilm_path: str, tmp_path: Path) -> Pipeline:
    """pipelines/demo_openai_milvus_<name>.yaml with base_url, model and the Lite database set for this test."""
    data = yaml.safe_load((REPO / "pipelines" / f"demo_openai_milvus_{name}.yaml").read_text())
    embedder = data["components"]["embedder"]["init_parameters"]
    embedder |= {"base_url": infinity.base_url, "model_name": minilm_path}
    if "embedding_path" in embedder:
        embedder["embedding_path"] = str(tmp_path / "embeddings.npy")
    writer = "writer" if "writer" in data["components"] else "retriever"
    data["components"][writer]["init_parameters"]["document_store"]["init_parameters"]["uri"] = str(tmp_path / "m.db")
    return Pipeline.loads(yaml.safe_dump({k: v for k, v in data.items() if k not in ("inputs", "outputs")}))


@pytest.mark.integration
def test_demo_preset_indexes_and_searches_through_an_openai_compatible_server(
    infinity: InfinityServer, minilm_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVER_API_KEY", infinity.api_key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join((REPO / "samples" / "python_docs.jsonl").read_text().splitlines(True)[:40]))
    index = demo("index", infinity, minilm_path, tmp_path)
    assert index.run({"reader": {"path": str(corpus)}})["writer"]["documents_written"] == 40
    index.get_component("writer").document_store.close()  # type: ignore[attr-defined]
    search = demo("search", infinity, minilm_path, tmp_path)
    docs = search.run({"embedder": {"text": QUERY}})["retriever"]["documents"]
    search.get_component("retriever").document_store.close()  # type: ignore[attr-defined]
    assert len(docs) == 5
    assert docs[0].id == "bz2-0"
