"""`needle mcp --config parameter.yaml` as an MCP host launches it: the mcp SDK's stdio client starts the command,
builds the indexes with the seed's tools and searches them, on UltraRAG HEAD's file and an UltraRAG-shaped corpus.

The web tool goes to a local server speaking ZhipuAI's protocol, through the file's own `websearch_backend_configs`.
"""

import asyncio
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import DATA
from tests.support.servers.websearch import API_KEY, serve

pytestmark = pytest.mark.integration
EXAMPLE = DATA / "ultrarag_parameter.yaml"
CORPUS = DATA / "ultrarag_corpus_example.jsonl"
QUERY = "how does a lens make the beam of a lighthouse"
INDEX_TOOLS = {"retriever_init", "retriever_embed", "retriever_index", "bm25_index"}
SEED_QUERY_TOOLS = {"retriever_search", "retriever_batch_search", "bm25_search", "retriever_deploy_search"}


@pytest.fixture
def zhipu() -> Iterator[str]:
    with serve("zhipuai") as (url, _):
        yield url


@pytest.fixture
def config(tmp_path: Path, zhipu: str) -> Path:
    """HEAD's file beside data/corpus_example.jsonl, web search pointed at the local ZhipuAI server."""
    (tmp_path / "data").mkdir()
    shutil.copy(CORPUS, tmp_path / "data" / "corpus_example.jsonl")
    data = yaml.safe_load(EXAMPLE.read_text())
    data["websearch_backend"] = "zhipuai"
    data["websearch_backend_configs"]["zhipuai"].update(base_url=f"{zhipu}/web_search", api_key="", retries=1)
    path = tmp_path / "parameter.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


async def session(config: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    """Launch `needle mcp --config CONFIG` over stdio; the tools it lists and each call's answer (or error)."""
    from mcp import Client, StdioServerParameters
    from mcp.types import TextContent

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ZHIPUAI_API_KEY": API_KEY}
    command = StdioServerParameters(
        command=sys.executable, args=["-m", "needle_retrieval.cli", "mcp", "--config", str(config)]
    )
    command.env, command.cwd = env, str(config.parent)  # UltraRAG reads relative paths from the working directory
    async with Client(command, read_timeout_seconds=600) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        answers = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text if isinstance(result.content[0], TextContent) else ""
            answers.append(("error", text) if result.is_error else result.structured_content)
        return names, answers


def test_stdio_lists_the_seeds_tools_builds_and_searches(config: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("retriever_search", {"query_list": [QUERY]}),  # no index yet
        ("bm25_index", {}),
        ("bm25_search", {"query_list": [QUERY, "sour starter for rye bread"], "top_k": 2}),
        ("retriever_embed", {}),
        ("retriever_index", {}),
        ("retriever_search", {"query_list": [QUERY], "top_k": 3}),
        ("retriever_batch_search", {"batch_query_list": [[QUERY], []], "top_k": 1}),
        ("retriever_websearch", {"query_list": ["lighthouse lens"], "top_k": 2}),
    ]
    names, answers = asyncio.run(session(config, calls))
    assert names >= INDEX_TOOLS | SEED_QUERY_TOOLS | {"retriever_websearch", "retriever_zhipuai_search"}
    missing, built_bm25, bm25, embedded, indexed, dense, batch, web = answers
    assert missing[0] == "error"
    assert "retriever_index" in missing[1]
    assert "bm25" in built_bm25["result"]
    lens, rye = bm25["ret_psg"]
    assert lens[0].startswith("Fresnel lens")
    assert any(text.startswith("Rye flour") for text in rye)
    assert "embedded" in embedded["result"]
    assert (config.parent / "embedding" / "embedding.npy").is_file()  # the seed's embedding_path
    assert "dense" in indexed["result"]
    assert dense["ret_psg"][0][0].startswith("Fresnel lens")
    assert len(dense["ret_psg"][0]) == 3
    assert batch == {"ret_psg_ls": [[dense["ret_psg"][0][:1]], []]}
    assert len(web["ret_psg"]) == 1
    assert len(web["ret_psg"][0]) == 2
    assert all("lighthouse lens" in text for text in web["ret_psg"][0])


def test_retriever_init_replaces_the_files_values_and_refuses_bad_ones(config: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("retriever_init", {"backend": "bm25"}),
        ("bm25_index", {}),
        ("retriever_search", {"query_list": [QUERY], "top_k": 1}),  # backend bm25: its index is the best mode
        ("retriever_init", {"index_backend": "qdrant"}),
    ]
    _, (init, _, found, refused) = asyncio.run(session(config, calls))
    assert "bm25" in init["result"]
    assert found["ret_psg"][0][0].startswith("Fresnel lens")
    assert refused[0] == "error"
    assert "index_backend" in refused[1]
