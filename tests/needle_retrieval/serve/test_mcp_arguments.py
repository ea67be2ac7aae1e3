"""The MCP tools take and refuse arguments as UltraRAG's retriever server (FastMCP 3.4.4) does, before any index opens.

UltraRAG's side was recorded from its real server (HEAD 015e838, ``servers/retriever/src/retriever.py`` over stdio
through fastmcp's client): each tool's ``tools/list`` input schema, and which calls its argument validation lets
through. Ours run in process on an index that is never opened: a call that passes validation reaches ``open``, which
answers a marker error, so "accepted" means "got as far as the index".
"""

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from needle_retrieval.serve.mcp import mcp_server
from needle_retrieval.serve.mcp_tools import IndexTools
from needle_retrieval.serve.mcp_web_tools import WebTools

REACHED = "reached the index"
STRINGS = {"type": "array", "items": {"type": "string"}}
LISTS = {"type": "array", "items": STRINGS}
TOP_K = {"type": "integer", "default": 5}
TEXT = {"type": "string", "default": ""}
WEB_TOP_K = {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5}
THREADS = {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 1}
CONFIGS = {"anyOf": [{"type": "object", "additionalProperties": True}, {"type": "null"}], "default": None}
WEB = {"top_k": WEB_TOP_K, "retrieve_thread_num": THREADS, "websearch_backend": TEXT | {"default": "tavily"}}
# UltraRAG's tools/list: each parameter's schema (less its description) and the required ones.
ULTRARAG: dict[str, tuple[dict[str, Any], list[str]]] = {
    "retriever_search": (
        {"query_list": STRINGS, "top_k": TOP_K, "query_instruction": TEXT, "collection_name": TEXT},
        ["query_list"],
    ),
    "retriever_batch_search": (
        {"batch_query_list": LISTS, "top_k": TOP_K, "query_instruction": TEXT, "collection_name": TEXT},
        ["batch_query_list"],
    ),
    "retriever_project_memory_search": (
        {"query_list": STRINGS, "top_k": TOP_K, "query_instruction": TEXT, "current_user_id": TEXT},
        ["query_list"],
    ),
    "bm25_search": ({"query_list": STRINGS, "top_k": TOP_K}, ["query_list"]),
    "retriever_deploy_search": (
        {"retriever_url": {"type": "string"}, "query_list": STRINGS, "top_k": TOP_K, "query_instruction": TEXT},
        ["retriever_url", "query_list"],
    ),
    "retriever_websearch": (
        {"query_list": STRINGS, **WEB, "websearch_backend_configs": CONFIGS},
        ["query_list"],
    ),
    "retriever_batch_websearch": (
        {"batch_query_list": LISTS, **WEB, "websearch_backend_configs": CONFIGS},
        ["batch_query_list"],
    ),
}
OUR_BOUNDS = ("description", "title", "minimum", "maximum")  # top_k 1..MAX_TOP_K and the like stay ours


async def never_opened(mode: str | None) -> Any:
    raise ToolError(REACHED)


@pytest.fixture(scope="module")
def server() -> Any:
    web = WebTools({provider: {} for provider in ("tavily", "exa", "zhipuai")}, "tavily", deploy_search=True)
    return mcp_server(IndexTools(open=never_opened), web)


def outcome(server: Any, name: str, arguments: dict[str, Any]) -> str:
    """The tool error's text (every call here ends in one: a refusal, or the marker of the index)."""
    with pytest.raises(ToolError) as error:
        asyncio.run(server.call_tool(name, arguments))
    return str(error.value)


def schema_of(server: Any, name: str) -> dict[str, Any]:
    (tool,) = [tool for tool in asyncio.run(server.list_tools()) if tool.name == name]
    schema: dict[str, Any] = tool.input_schema
    return schema


def without(schema: Any, keys: tuple[str, ...]) -> Any:
    """SCHEMA with KEYS removed at every depth."""
    if isinstance(schema, dict):
        return {key: without(value, keys) for key, value in schema.items() if key not in keys}
    if isinstance(schema, list):
        return [without(value, keys) for value in schema]
    return schema


@pytest.mark.parametrize("name", sorted(ULTRARAG))
def test_input_schemas_are_ultrarags_plus_our_bounds(server: Any, name: str) -> None:
    properties, required = ULTRARAG[name]
    ours = schema_of(server, name)
    assert ours["additionalProperties"] is False
    assert sorted(ours.get("required", [])) == sorted(required)
    assert without(ours["properties"], OUR_BOUNDS) == properties


@pytest.mark.parametrize(
    ("name", "arguments", "accepted"),
    [
        # what UltraRAG's FastMCP server let through its validation, and what it refused
        ("retriever_search", {"query_list": ["a"], "top_k": "5"}, True),
        ("retriever_search", {"query_list": ["a"], "top_k": 5.0}, True),
        ("retriever_search", {"query_list": ["a"], "top_k": True}, True),
        ("retriever_project_memory_search", {"query_list": ["a"], "current_user_id": "u1"}, True),
        ("retriever_search", {"query_list": ["a"], "bogus": 1}, False),
        ("retriever_search", {"query_list": "a"}, False),
        ("retriever_search", {"query_list": '["a", "b"]'}, False),
        ("retriever_search", {"query_list": [1, 2]}, False),
        ("retriever_search", {"query_list": ["a"], "top_k": 5.5}, False),
        ("retriever_search", {"query_list": ["a"], "top_k": None}, False),
        ("retriever_search", {"query_list": ["a"], "query_instruction": None}, False),
        ("retriever_search", {"query_list": ["a"], "collection_name": 3}, False),
        ("retriever_search", {"top_k": 5}, False),
        ("bm25_search", {"query_list": "a", "top_k": 3}, False),
        ("bm25_search", {"query_list": ["a"], "extra": "x"}, False),
        ("retriever_batch_search", {"batch_query_list": ["a", "b"]}, False),
        ("retriever_batch_search", {"batch_query_list": '[["a"]]'}, False),
        ("retriever_batch_search", {"batch_query_list": [["a"]], "x": 1}, False),
        ("retriever_project_memory_search", {"query_list": "a"}, False),
        ("retriever_project_memory_search", {"query_list": ["a"], "current_user_id": 5}, False),
        ("retriever_project_memory_search", {"query_list": ["a"], "current_user_id": None}, False),
        ("retriever_deploy_search", {"retriever_url": "x", "query_list": "a"}, False),
        ("retriever_websearch", {"query_list": "a"}, False),
        ("retriever_websearch", {"query_list": ["a"], "websearch_backend_configs": '{"tavily": {}}'}, False),
    ],
)
def test_calls_are_accepted_and_refused_as_ultrarags(
    server: Any, name: str, arguments: dict[str, Any], accepted: bool
) -> None:
    text = outcome(server, name, arguments)
    assert (REACHED in text) is accepted, text
    if not accepted:
        assert "validation error" in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query_list": ["a"], "top_k": 0}, "greater than or equal to 1"),
        ({"query_list": ["a"], "top_k": 10_001}, "less than or equal to 10000"),
        ({"query_list": []}, "query_list is empty"),
    ],
)
def test_our_bounds_stay(server: Any, arguments: dict[str, Any], message: str) -> None:
    assert message in outcome(server, "retriever_search", arguments)


def test_a_tool_added_later_is_strict_too(server: Any) -> None:
    """`needle mcp` adds its index-building tools to the server after it is made: they take arguments as
    UltraRAG's retriever_init and retriever_index do."""

    async def retriever_probe(overwrite: bool = False, backend_configs: dict[str, Any] | None = None) -> str:
        return f"overwrite={overwrite} configs={backend_configs}"

    server.add_tool(retriever_probe)
    assert schema_of(server, "retriever_probe")["additionalProperties"] is False
    assert "validation error" in outcome(server, "retriever_probe", {"overwrite": True, "path": "x"})
    assert "validation error" in outcome(server, "retriever_probe", {"backend_configs": '{"a": 1}'})
    answer = asyncio.run(server.call_tool("retriever_probe", {"overwrite": "true", "backend_configs": {"a": 1}}))
    assert answer.content[0].text == "overwrite=True configs={'a': 1}"


def test_the_mcp_modules_import_no_model_library() -> None:
    """`needle mcp` must list its tools before Haystack, torch or the pipelines load."""
    heavy = (
        "haystack", "torch", "transformers", "fastapi", "hayhooks", "components.retrievers", "components.stores",
        "needle_retrieval.search", "needle_retrieval.index", "needle_retrieval.pipelines",
        "needle_retrieval.serve.ultrarag", "needle_retrieval.serve.run", "needle_retrieval.serve.pipelines",
    )  # fmt: skip
    code = (
        "import sys\n"
        "import needle_retrieval.serve.mcp, needle_retrieval.serve.mcp_tools, needle_retrieval.serve.mcp_web_tools\n"
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
