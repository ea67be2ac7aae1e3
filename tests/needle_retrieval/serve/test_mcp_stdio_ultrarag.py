"""`needle mcp` where UltraRAG's client puts its retriever: started without --config (retriever_init gives the
values, paths from the working directory), through the drop-in file run by another python, and answering
`ultrarag build`'s ``build(parameter_file)`` with the server.yaml UltraRAG's own retriever server writes.

Each test launches the real command over stdio with the mcp SDK's client, in a scratch project laid out as
UltraRAG's: ``servers/retriever/{parameter.yaml,src/retriever.py}`` and ``data/corpus_example.jsonl``.
"""

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from needle_retrieval.ultrarag.dropin import DROPIN
from tests.support.paths import DATA
from tests.support.ultrarag import ultrarag_or_skip

pytestmark = pytest.mark.integration
PARAMETERS = Path("servers") / "retriever" / "parameter.yaml"
NEEDLE = Path(sys.executable).parent / "needle"
QUERY = "how does a lens make the beam of a lighthouse"
# What UltraRAG HEAD's retriever server writes for tests/data/ultrarag_parameter.yaml (its `build` tool).
EXPECTED_TOOLS: dict[str, Any] = {
    "retriever_init": {
        "input": {
            key: f"${key}"
            for key in (
                "model_name_or_path",
                "backend_configs",
                "batch_size",
                "corpus_path",
                "gpu_ids",
                "is_multimodal",
                "backend",
                "index_backend",
                "index_backend_configs",
                "is_demo",
                "collection_name",
            )
        }
    },
    "retriever_embed": {
        "input": {"embedding_path": "$embedding_path", "overwrite": "$overwrite", "is_multimodal": "$is_multimodal"}
    },
    "retriever_index": {
        "input": {
            "embedding_path": "$embedding_path",
            "overwrite": "$overwrite",
            "collection_name": "$collection_name",
            "corpus_path": "$corpus_path",
        }
    },
    "retriever_search": {
        "input": {
            "query_list": "q_ls",
            "top_k": "$top_k",
            "query_instruction": "$query_instruction",
            "collection_name": "$collection_name",
        },
        "output": ["ret_psg"],
    },
    "retriever_batch_search": {
        "input": {
            "batch_query_list": "batch_query_list",
            "top_k": "$top_k",
            "query_instruction": "$query_instruction",
            "collection_name": "$collection_name",
        },
        "output": ["ret_psg_ls"],
    },
    "retriever_project_memory_search": {
        "input": {
            "query_list": "q_ls",
            "top_k": "$top_k",
            "query_instruction": "$query_instruction",
            "current_user_id": "current_user_id",
        },
        "output": ["project_memory_content"],
    },
    "bm25_index": {"input": {"overwrite": "$overwrite"}},
    "bm25_search": {"input": {"query_list": "q_ls", "top_k": "$top_k"}, "output": ["ret_psg"]},
    "retriever_deploy_search": {
        "input": {
            "retriever_url": "$retriever_url",
            "query_list": "q_ls",
            "top_k": "$top_k",
            "query_instruction": "$query_instruction",
        },
        "output": ["ret_psg"],
    },
    "retriever_websearch": {
        "input": {
            "query_list": "q_ls",
            "top_k": "$top_k",
            "retrieve_thread_num": "$retrieve_thread_num",
            "websearch_backend": "$websearch_backend",
            "websearch_backend_configs": "$websearch_backend_configs",
        },
        "output": ["ret_psg"],
    },
    "retriever_batch_websearch": {
        "input": {
            "batch_query_list": "batch_query_list",
            "top_k": "$top_k",
            "retrieve_thread_num": "$retrieve_thread_num",
            "websearch_backend": "$websearch_backend",
            "websearch_backend_configs": "$websearch_backend_configs",
        },
        "output": ["ret_psg_ls"],
    },
}


def project(root: Path) -> Path:
    """An UltraRAG project: HEAD's retriever parameter.yaml, the drop-in as its server file, the example corpus."""
    (root / PARAMETERS.parent / "src").mkdir(parents=True)
    shutil.copy(DATA / "ultrarag_parameter.yaml", root / PARAMETERS)
    (root / PARAMETERS.parent / "src" / "retriever.py").write_text(DROPIN)
    (root / "data").mkdir()
    shutil.copy(DATA / "ultrarag_corpus_example.jsonl", root / "data" / "corpus_example.jsonl")
    return root


async def session(argv: list[str], cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    """Launch ARGV in CWD as an MCP host does; the tools it lists and each call's answer (or ("error", text))."""
    from mcp import Client, StdioServerParameters
    from mcp.types import TextContent

    command = StdioServerParameters(command=argv[0], args=argv[1:])
    command.env = {**os.environ, "HF_HUB_OFFLINE": "1", "NEEDLE": str(NEEDLE)}
    command.cwd = str(cwd)
    async with Client(command, read_timeout_seconds=600) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        answers = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text if isinstance(result.content[0], TextContent) else ""
            answers.append(("error", text) if result.is_error else result.structured_content)
        return names, answers


def needle_mcp(root: Path, calls: list[tuple[str, dict[str, Any]]], *args: str) -> tuple[set[str], list[Any]]:
    """`needle mcp ARGS` in ROOT."""
    return asyncio.run(session([str(NEEDLE), "mcp", *args], root, calls))


def test_build_writes_the_server_yaml_ultrarag_build_reads(tmp_path: Path) -> None:
    root = project(tmp_path)
    _, (built,) = needle_mcp(root, [("build", {"parameter_file": str(PARAMETERS)})])
    assert "server.yaml" in built["result"]
    written = yaml.safe_load((root / PARAMETERS.parent / "server.yaml").read_text())
    assert written == {
        "path": "servers/retriever/src/retriever.py",
        "parameter": str(PARAMETERS),
        "tools": EXPECTED_TOOLS,
        "prompts": {},
    }
    assert list(written["tools"]) == list(EXPECTED_TOOLS)  # UltraRAG's order
    assert sorted(p.name for p in (root / PARAMETERS.parent).iterdir()) == ["parameter.yaml", "server.yaml", "src"]


def test_build_takes_the_files_path_and_refuses_missing_server_code(tmp_path: Path) -> None:
    root = project(tmp_path)
    data = yaml.safe_load((root / PARAMETERS).read_text())
    (root / PARAMETERS).write_text(yaml.safe_dump({**data, "path": "bin/needle_retriever.py"}))
    calls = [("build", {"parameter_file": str(PARAMETERS)})]
    _, (refused,) = needle_mcp(root, calls)
    assert refused[0] == "error"
    assert "bin/needle_retriever.py" in refused[1]
    assert not (root / PARAMETERS.parent / "server.yaml").exists()
    (root / "bin").mkdir()
    (root / "bin" / "needle_retriever.py").write_text(DROPIN)
    _, (built,) = needle_mcp(root, calls)
    assert "server.yaml" in built["result"]
    assert yaml.safe_load((root / PARAMETERS.parent / "server.yaml").read_text())["path"] == "bin/needle_retriever.py"


def test_build_equals_ultrarags_own_retriever_build(tmp_path: Path) -> None:
    ultrarag = ultrarag_or_skip()
    theirs_root, ours_root = project(tmp_path / "theirs"), project(tmp_path / "ours")
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import retriever; "
        "retriever.Retriever(retriever.app); retriever.app.build(sys.argv[2])"
    )
    source = ultrarag.src / "servers" / "retriever" / "src"
    done = subprocess.run(
        [str(ultrarag.python), "-c", script, str(source), str(PARAMETERS)],
        cwd=theirs_root,
        env=ultrarag.env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    needle_mcp(ours_root, [("build", {"parameter_file": str(PARAMETERS)})])
    theirs = yaml.safe_load((theirs_root / PARAMETERS.parent / "server.yaml").read_text())
    ours = yaml.safe_load((ours_root / PARAMETERS.parent / "server.yaml").read_text())
    assert ours == theirs
    assert list(ours["tools"]) == list(theirs["tools"])


def test_without_config_every_index_tool_asks_for_retriever_init(tmp_path: Path) -> None:
    root = project(tmp_path)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("retriever_search", {"query_list": [QUERY]}),
        ("bm25_search", {"query_list": [QUERY]}),
        ("retriever_embed", {}),
        ("retriever_index", {"embedding_path": "embedding/embedding.npy"}),
        ("bm25_index", {}),
    ]
    names, answers = needle_mcp(root, calls)
    assert {"build", "retriever_init", "retriever_search", "bm25_index"} <= names
    for answer in answers:
        assert answer[0] == "error"
        assert "call retriever_init" in answer[1]
        assert "\n" not in answer[1]
    assert not (root / "index").exists()


def test_retriever_init_as_ultrarags_client_sends_it_then_builds_and_searches(tmp_path: Path) -> None:
    root = project(tmp_path)
    values = yaml.safe_load((root / PARAMETERS).read_text())
    init = {key: values[key] for key in EXPECTED_TOOLS["retriever_init"]["input"]}  # as server.yaml maps them
    calls = [
        ("retriever_init", init | {"gpu_ids": None}),
        ("bm25_index", {"overwrite": False}),
        ("bm25_search", {"query_list": [QUERY], "top_k": 2}),
        ("retriever_init", init | {"index_backend": "qdrant"}),  # refused; the earlier values stay
        ("bm25_search", {"query_list": [QUERY], "top_k": 1}),
    ]
    _, (ready, built, found, refused, again) = needle_mcp(root, calls)
    assert "retriever ready" in ready["result"]
    assert "bm25" in built["result"]
    assert (root / "index" / "bm25").is_dir()  # save_path: index/bm25, from the working directory
    assert found["ret_psg"][0][0].startswith("Fresnel lens")
    assert refused[0] == "error"
    assert "index_backend" in refused[1]
    assert again["ret_psg"][0] == found["ret_psg"][0][:1]


def test_the_dropin_run_by_another_python_is_needle_mcp(tmp_path: Path) -> None:
    root = project(tmp_path)
    printed = subprocess.run([str(NEEDLE), "mcp", "--drop-in"], capture_output=True, text=True, check=True)
    assert printed.stdout == DROPIN  # what the docs tell a user to run
    module = subprocess.run(
        [sys.executable, "-m", "needle_retrieval.ultrarag.dropin"], capture_output=True, text=True, check=True
    )
    assert module.stdout == DROPIN
    (root / PARAMETERS.parent / "src" / "retriever.py").write_text(printed.stdout)
    python = str(Path(sys.base_prefix) / "bin" / "python3")  # this interpreter without the venv: no needle in it
    bare = subprocess.run([python, "-I", "-c", "import needle_retrieval"], capture_output=True, check=False)
    assert bare.returncode != 0
    argv = [python, "-I", str(PARAMETERS.parent / "src" / "retriever.py")]
    names, (refused,) = asyncio.run(session(argv, root, [("bm25_search", {"query_list": [QUERY]})]))
    assert {"build", "retriever_init", "retriever_search", "bm25_index", "retriever_embed"} <= names
    assert "call retriever_init" in refused[1]


def test_a_broken_config_ends_the_start_or_fails_the_tools_in_one_line(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "bad.yaml").write_text("top_k: [1, 2\n")
    for path, said in (("missing.yaml", "no such file"), ("bad.yaml", "bad.yaml")):
        done = subprocess.run(
            [str(NEEDLE), "mcp", "--config", path],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 2
        assert done.stdout == ""
        assert "cannot read the parameter file" in done.stderr
        assert said in done.stderr
    data = yaml.safe_load((root / PARAMETERS).read_text())
    (root / "typo.yaml").write_text(yaml.safe_dump({**data, "top_k": "five"}))
    calls: list[tuple[str, dict[str, Any]]] = [("retriever_search", {"query_list": [QUERY]}), ("bm25_index", {})]
    for answer in needle_mcp(root, calls, "--config", "typo.yaml")[1]:
        assert answer[0] == "error"
        assert "typo.yaml" in answer[1]
        assert "top_k" in answer[1]
        assert "\n" not in answer[1]


def test_build_and_open_errors_name_the_tools_and_arguments_not_cli_flags(tmp_path: Path) -> None:
    root = project(tmp_path)
    data = yaml.safe_load((root / PARAMETERS).read_text())
    data["backend_configs"]["bm25"]["save_path"] = "taken"
    (root / "taken").write_text("a file where the BM25 index goes\n")
    (root / "index").mkdir()
    (root / "index" / "index.index").write_bytes(b"IxF2 a FAISS file UltraRAG wrote")  # faiss index_path
    (root / "config.yaml").write_text(yaml.safe_dump(data))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("bm25_index", {"overwrite": True}),
        ("retriever_search", {"query_list": [QUERY]}),
        ("bm25_search", {"query_list": [QUERY]}),
    ]
    _, (refused, foreign, missing) = needle_mcp(root, calls, "--config", "config.yaml")
    assert "taken" in refused[1]
    assert "backend_configs.bm25.save_path" in refused[1]
    assert "index.index is not a needle index" in foreign[1]
    assert "retriever_index" in foreign[1]
    assert "overwrite=true" in foreign[1]
    assert "bm25_index" in missing[1]
    for answer in (refused, foreign, missing):
        assert answer[0] == "error"
        assert "--out" not in answer[1]
        assert "--overwrite" not in answer[1]
        assert "`needle" not in answer[1]  # no CLI command line


def test_needles_own_tools_get_entries_a_pipeline_can_name(tmp_path: Path) -> None:
    from needle_retrieval.ultrarag.server_yaml import server_config

    root = project(tmp_path)
    tools = {"needle_extra": ["query", "top_k"], "retriever_exa_search": ["query_list", "top_k", "retrieve_thread_num"]}
    written = server_config(str(root / PARAMETERS), tools)["tools"]
    assert list(written) == ["needle_extra", "retriever_exa_search"]
    assert written["needle_extra"] == {"input": {"query": "query", "top_k": "$top_k"}}  # no spec: its own names
    assert written["retriever_exa_search"] == {
        "input": {"query_list": "q_ls", "top_k": "$top_k", "retrieve_thread_num": "$retrieve_thread_num"},
        "output": ["ret_psg"],
    }
