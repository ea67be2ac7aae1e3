"""UltraRAG HEAD's retriever parameter.yaml as it is, over an UltraRAG-shaped corpus that repeats ids.

tests/data/ultrarag_parameter.yaml has exactly the keys and structure of UltraRAG HEAD's file (our values);
tests/data/ultrarag_corpus_example.jsonl repeats ids as UltraRAG's data/corpus_example.jsonl does (our text).
Every test drives the real CLI (`needle_retrieval.cli.main`), the real stores, MiniLM offline, Milvus Lite and a real
`milvus-lite server`, and a local server speaking ZhipuAI's web_search API.
"""

import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml
from haystack.utils import Secret

from components.websearch import WebBatchSearch, WebSearch, WebSearchError
from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.trust import config_trust
from needle_retrieval.search.searcher import Searcher
from needle_retrieval.ultrarag.config import load_config, search_target, web_search_component
from needle_retrieval.ultrarag.websearch import EXA_CONTENTS
from tests.support import milvus as milvus_support
from tests.support.paths import DATA
from tests.support.servers.websearch import API_KEY, ZHIPU_PATH, serve

EXAMPLE = DATA / "ultrarag_parameter.yaml"
CORPUS = DATA / "ultrarag_corpus_example.jsonl"
SECRETS = ("RETRIEVER_API_KEY", "OPENAI_API_KEY", "MILVUS_TOKEN", "EXA_API_KEY", "TAVILY_API_KEY", "ZHIPUAI_API_KEY")
QUERY = "how does a lens make the beam of a lighthouse"
milvus_server = milvus_support.milvus_server


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key variables set, and whatever a test's parameter file puts there removed afterwards."""
    for name in SECRETS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@pytest.fixture
def head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The HEAD-shaped parameter file (unchanged) beside data/corpus_example.jsonl, run from that directory (its
    paths are relative to the working directory, as UltraRAG's); returns the file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    shutil.copy(CORPUS, tmp_path / "data" / "corpus_example.jsonl")
    shutil.copy(EXAMPLE, tmp_path / "parameter.yaml")
    return tmp_path / "parameter.yaml"


def variant(config: Path, name: str, **changes: object) -> Path:
    """A copy of CONFIG named NAME beside it, top-level keys changed (dicts merged one level deep)."""
    data = yaml.safe_load(config.read_text())
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            for inner, block in value.items():
                data[key][inner] = {**(data[key].get(inner) or {}), **block} if isinstance(block, dict) else block
        else:
            data[key] = value
    path = config.with_name(name)
    path.write_text(yaml.safe_dump(data))
    return path


def search(capsys: pytest.CaptureFixture[str], config: Path, *argv: str) -> str:
    capsys.readouterr()
    assert main(["search", "--config", str(config), *argv]) == 0
    return capsys.readouterr().out


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


@pytest.mark.integration
def test_the_head_file_indexes_and_searches_a_corpus_with_repeated_ids_as_it_is(
    head: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    assert main(["index", "--config", str(head)]) == 0
    assert head.read_bytes() == EXAMPLE.read_bytes()  # the file as it ships: nothing edited
    index = head.parent / "index" / "index.index"  # faiss index_path is the index directory
    manifest = IndexManifest.load(index)
    assert (manifest.documents, manifest.modes) == (7, ["dense"])  # every row indexed, repeats included
    assert manifest.store_settings == {"index_chunk_size": 2000, "index_use_gpu": True}
    said = warnings_of(caplog)
    assert not [w for w in said if "ignored" in w or "not used" in w or "not supported" in w]
    if torch.cuda.device_count() < 2:  # gpu_ids: "1" names a GPU this machine lacks
        assert [w for w in said if w.startswith("gpu_ids")] == [
            f"gpu_ids: GPU 1 is not available on this machine ({torch.cuda.device_count()} CUDA devices); using "
            + ("the CPU" if torch.cuda.device_count() == 0 else "the default device")
        ]
    hits = json.loads(search(capsys, head, QUERY, "--json"))[0]
    assert len(hits) == 5  # the file's top_k
    assert hits[0]["id"] == "700245#3"  # line 3 repeats line 2's id: keyed by position, the id kept visible
    assert hits[0]["content"].startswith("Fresnel lens")
    assert len({hit["id"] for hit in hits}) == 5
    searcher = Searcher(index, top_k=7, trust=config_trust(load_config(head).spec))  # the file's trust_remote_code
    docs = {doc.id: doc for doc in searcher.search(["rye and sourdough"])[0]}
    assert {"388012", "388012#5", "388012#7"} <= set(docs)
    assert docs["388012#7"].meta["corpus_id"] == "388012"
    assert "corpus_id" not in docs["388012"].meta  # the first row with an id keeps it


@pytest.mark.integration
def test_bm25_and_dense_indexes_of_one_file_keep_apart_and_search_config_runs_the_files_backend(
    head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bm25 = variant(head, "bm25.yaml", backend="bm25")
    assert main(["index", "--config", str(head)]) == 0
    dense_generation = IndexManifest.load(head.parent / "index" / "index.index").generation
    assert main(["index", "--config", str(bm25)]) == 0
    assert IndexManifest.load(head.parent / "index" / "bm25").modes == ["bm25"]  # save_path is its directory
    dense = IndexManifest.load(head.parent / "index" / "index.index")
    assert (dense.modes, dense.generation) == (["dense"], dense_generation)  # untouched by the BM25 build
    assert f"{QUERY}  [dense]" in search(capsys, head, QUERY)
    assert f"{QUERY}  [bm25]" in search(capsys, bm25, QUERY)
    assert main(["index", "--config", str(head)]) == 0  # and a dense rebuild leaves the BM25 index alone
    assert IndexManifest.load(head.parent / "index" / "bm25").modes == ["bm25"]
    assert search_target(load_config(bm25)) == (head.parent / "index" / "bm25", "bm25")


@pytest.mark.integration
def test_search_target_refuses_an_index_built_for_another_backend(head: Path) -> None:
    shared = {"bm25": {"save_path": "index/shared"}}
    bm25 = variant(head, "bm25.yaml", backend="bm25", backend_configs=shared)
    assert main(["index", "--config", str(bm25)]) == 0
    dense = variant(head, "dense.yaml", index_backend_configs={"faiss": {"index_path": "index/shared"}})
    with pytest.raises(NeedleError, match=r"backend sentence_transformers names the index .* built with backend bm25"):
        search_target(load_config(dense))


@pytest.mark.integration
def test_milvus_lite_takes_the_files_field_names_and_search_params(
    head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pymilvus import MilvusClient

    block = {"text_field_name": "passage", "id_max_length": 32, "search_params": {"params": {"level": 2}}}
    config = variant(head, "milvus.yaml", index_backend="milvus", index_backend_configs={"milvus": block})
    assert main(["index", "--config", str(config)]) == 0
    index = head.parent / "index" / "milvus_demo.db"  # the Lite uri is the index directory
    manifest = IndexManifest.load(index)
    assert manifest.store_settings is not None
    assert manifest.store_settings["search_params"] == {"metric_type": "IP", "params": {"level": 2}}
    assert json.loads(search(capsys, config, QUERY, "--json"))[0][0]["id"] == "700245#3"
    searcher = Searcher(index, trust=config_trust(load_config(config).spec))
    store = searcher.pipeline.get_component("retriever").document_store  # type: ignore[attr-defined]
    assert store.settings.dense_search() == {"metric_type": "IP", "params": {"level": 2}}
    searcher.close()
    client = MilvusClient(uri=str(index / manifest.generation / "milvus.db"))
    fields = {field["name"]: field for field in client.describe_collection("passages")["fields"]}
    client.close()
    assert "passage" in fields
    assert "contents" not in fields
    assert fields["id"]["params"]["max_length"] == 32


@pytest.mark.integration
def test_rerunning_index_config_against_a_milvus_server_builds_the_next_generation(
    head: Path,
    milvus_server: milvus_support.MilvusServer,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pymilvus import MilvusClient

    block = {"uri": milvus_server.uri, "token": "root:Milvus-literal"}
    config = variant(head, "server.yaml", index_backend="milvus", index_backend_configs={"milvus": block})
    assert main(["index", "--config", str(config)]) == 0
    assert main(["index", "--config", str(config)]) == 0  # the rerun: a new generation, a new collection
    index = head.parent / "embedding" / "milvus_passages"  # beside embedding_path: nothing local names a server
    manifest = IndexManifest.load(index)
    assert (manifest.uri, manifest.collection) == (milvus_server.uri, "passages_gen000002")
    client = MilvusClient(uri=milvus_server.uri)
    assert client.describe_alias("passages")["collection_name"] == "passages_gen000002"
    client.close()
    assert json.loads(search(capsys, config, QUERY, "--json"))[0][0]["id"] == "700245#3"
    assert any("index_backend_configs.milvus.token is a literal token" in w for w in warnings_of(caplog))
    written = [p.read_text(errors="replace") for p in index.rglob("*") if p.is_file() and p.suffix != ".npy"]
    assert written
    assert not [text for text in written if "Milvus-literal" in text]


# --- web search: websearch_backend and websearch_backend_configs -------------------------------------------------


def test_web_search_blocks_become_the_components_init_parameters(head: Path) -> None:
    config = load_config(head)
    choice = config.websearch
    assert choice.backend == "tavily"
    assert (config.retrieve_thread_num, config.retriever_url) == (2, "http://127.0.0.1:64501")
    assert choice.options["tavily"] == {
        "api_key": Secret.from_env_var("TAVILY_API_KEY", strict=False),
        "retries": 2,  # UltraRAG's `retries: 3` is 3 tries: the first and 2 retries
        "base_delay": 0.5,
        "search_kwargs": {},
    }
    assert choice.options["zhipuai"] == {
        "api_key": Secret.from_env_var("ZHIPUAI_API_KEY", strict=False),
        "retries": 2,
        "base_delay": 0.5,
        "search_kwargs": {},
        "base_url": "https://open.bigmodel.cn/api/paas/v4",  # the API root ZhipuAIWebSearch appends /web_search to
        "search_engine": "search_std",
        "search_intent": False,
        "search_recency_filter": "noLimit",
        "content_size": "medium",
    }
    single = web_search_component(config)
    assert isinstance(single, WebSearch)
    assert (single.backend, single.delegate.top_k, single.delegate.retrieve_thread_num) == ("tavily", 5, 2)
    batch = web_search_component(config, "zhipuai", batch=True)
    assert isinstance(batch, WebBatchSearch)
    assert batch.delegate.base_url == "https://open.bigmodel.cn/api/paas/v4"
    assert batch.delegate.search_engine == "search_std"
    with pytest.raises(NeedleError, match=r"websearch_backend_configs\.bing"):
        web_search_component(config, "bing")


def test_a_literal_web_key_reaches_its_component_through_the_environment_only(
    head: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = load_config(variant(head, "keyed.yaml", websearch_backend_configs={"exa": {"api_key": "exa-literal"}}))
    assert "websearch_backend_configs.exa.api_key is a literal key" in caplog.text
    component = web_search_component(config, "exa")
    assert component.delegate.api_key.resolve_value() == "exa-literal"
    assert "exa-literal" not in json.dumps(component.to_dict())


def test_exa_search_kwargs_nest_content_options_as_ultrarags_sdk_call_does(head: Path) -> None:
    import exa_py.api

    assert set(EXA_CONTENTS) == set(exa_py.api.NESTED_CONTENTS_FIELDS)
    kwargs = {"type": "neural", "text": {"max_characters": 500}, "highlights": True, "num_results": 3}
    config = load_config(variant(head, "exa.yaml", websearch_backend_configs={"exa": {"search_kwargs": kwargs}}))
    assert config.websearch.options["exa"]["search_kwargs"] == {
        "type": "neural",
        "contents": {"text": {"max_characters": 500}, "highlights": True},
    }


@pytest.fixture
def zhipu() -> Iterator[tuple[str, object]]:
    with serve("zhipuai") as running:
        yield running


def test_zhipuai_posts_to_the_files_endpoint_with_its_options_and_tries(
    head: Path, zhipu: tuple[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state = zhipu
    monkeypatch.setenv("ZHIPUAI_API_KEY", API_KEY)
    block = {"base_url": f"{root}/web_search", "base_delay": 0.0, "search_engine": "search_pro", "content_size": "high"}
    edited = variant(head, "zhipu.yaml", websearch_backend="zhipuai", websearch_backend_configs={"zhipuai": block})
    config = load_config(edited)
    component = web_search_component(config)
    docs = component.run(query="tide tables")["documents"]
    assert len(docs) == 5
    [request] = state.log  # type: ignore[attr-defined]
    assert request["path"] == ZHIPU_PATH
    assert request["body"]["search_engine"] == "search_pro"
    assert request["body"]["content_size"] == "high"
    state.fail = [500, 502, 503, 504]  # type: ignore[attr-defined]
    with pytest.raises(WebSearchError, match=r"3 attempt\(s\)"):  # `retries: 3` = 3 tries
        component.run(query="tide tables")
    assert len(state.log) == 1 + 3  # type: ignore[attr-defined]
