"""`needle mcp [--config parameter.yaml]`: UltraRAG's retriever server on stdio, as an MCP host launches it.

The host that starts this process is trusted (it chose the file and the command), so beside the query tools of
``needle_retrieval.serve.mcp_tools`` and the web tools of ``needle_retrieval.serve.mcp_web_tools`` (whose callers may
pass ``websearch_backend_configs`` here) it lists the seed's index-building tools, with the seed's parameters, and
the ``build`` tool every UltraRAG server has:

* ``retriever_init(...)``: the seed's init parameters, each replacing the file's value for this process (checked
  as the file is, by ``needle_retrieval.ultrarag.config``); the index is opened anew on the next search. Started
  without ``--config`` (as UltraRAG's client starts its retriever: ``python servers/retriever/src/retriever.py``,
  needle's drop-in there, ``needle_retrieval.ultrarag.dropin``), these values are the whole configuration, paths
  relative to the working directory, and every index or search tool before it is a tool error saying so;
* ``retriever_embed(embedding_path?, overwrite=False, is_multimodal=False)``: the corpus vectors into
  ``embedding_path`` (kept unless ``overwrite``); ``retriever_index(embedding_path?, overwrite=False,
  collection_name="", corpus_path="")``: the dense index from those vectors, without encoding;
* ``bm25_index(overwrite=False)``: the BM25 build of the same file (``backend: bm25``), in its own index directory
  (the three: ``needle_retrieval.ultrarag.build``, whose errors name these arguments, never the CLI's flags);
* ``build(parameter_file)``: writes the ``server.yaml`` `ultrarag build` reads beside that file
  (``needle_retrieval.ultrarag.server_yaml``); it needs no configuration.

Start-up is light, so the host's ``tools/list`` is answered within a second: the tools are registered from their
signatures, and the model libraries (Haystack, torch) and the full check of the parameter file load on the first
call that needs them. At start-up ``--config`` is read and parsed (a missing file, bad YAML or no mapping ends the
process with that one line, before any protocol); a key or value the full check refuses is the tool error of
every call that needs the configuration (``retriever_init`` with a corrected value clears it). Builds are needle's
crash-safe generations: a search during a build answers from the live index, and the next search after it opens
the new one. Nothing is written to stdout but the protocol; logs go to stderr.
"""

import asyncio
import dataclasses
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from needle_retrieval.defaults import INDEX_POINTER
from needle_retrieval.errors import NeedleError, one_line
from needle_retrieval.serve.mcp import mcp_server
from needle_retrieval.serve.mcp_tools import WEB_PROVIDERS, IndexTools
from needle_retrieval.serve.mcp_web_tools import KEY_VARIABLES, WebTools
from needle_retrieval.ultrarag.server_yaml import read_parameters, write_server_yaml

if TYPE_CHECKING:
    from needle_retrieval.serve.pipelines import ServedPipelines
    from needle_retrieval.ultrarag.config import UltraRAGConfig

INIT_KEYS = (
    "model_name_or_path", "backend_configs", "batch_size", "corpus_path", "gpu_ids", "is_multimodal", "backend",
    "index_backend", "index_backend_configs", "is_demo", "collection_name",
)  # fmt: skip
NO_CONFIG = (
    "no retriever configuration yet: call retriever_init with the retriever's parameters first "
    "(or start `needle mcp --config parameter.yaml`)"
)


def checked_config(path: Path | None, overrides: Mapping[str, Any]) -> "UltraRAGConfig":
    """The file at PATH (None: OVERRIDES alone, paths from the working directory) with OVERRIDES, fully checked;
    a refusal is a tool error naming the file and key. Imports the configuration modules on first use."""
    from needle_retrieval.ultrarag.config import load_config

    try:
        return load_config(path, overrides)
    except (NeedleError, ValueError, OSError) as error:
        raise ToolError(one_line(error)) from None


class ConfiguredIndex:
    """The parameter file (or retriever_init's values), the seed's overrides of it, and the index it names; each
    checked, loaded or opened on first use."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.overrides: dict[str, Any] = {}
        self.loaded: UltraRAGConfig | None = None
        self.served: dict[Path, ServedPipelines] = {}  # by index directory
        self.lock = asyncio.Lock()  # one build, open or retriever_init at a time
        self.loading = asyncio.Lock()  # one full check of the file at a time

    async def config(self) -> "UltraRAGConfig":
        """The checked configuration; a tool error before retriever_init when there is no file."""
        async with self.loading:
            if self.loaded is None:
                if self.path is None:
                    raise ToolError(NO_CONFIG)
                self.loaded = await asyncio.to_thread(checked_config, self.path, self.overrides)
            return self.loaded

    async def reload(self, overrides: dict[str, Any]) -> "UltraRAGConfig":
        """Check the file (or nothing) with OVERRIDES over the earlier ones; keep them only when valid."""
        async with self.lock:
            merged = {**self.overrides, **overrides}
            config = await asyncio.to_thread(checked_config, self.path, merged)
            self.overrides, self.loaded, self.served = merged, config, {}
            return config

    def index_dir(self, config: "UltraRAGConfig", mode: str | None) -> Path:
        """Where MODE's index is: BM25's own directory for ``bm25`` (``backend: bm25`` builds it), else the file's."""
        if mode != "bm25" or not config.spec.dense:
            return config.index_dir
        return checked_config(self.path, {**self.overrides, "backend": "bm25"}).index_dir

    async def open(self, mode: str | None) -> "ServedPipelines":
        """The index that answers MODE, deployed once (and again after a build)."""
        async with self.lock:
            config = await self.config()
            where = await asyncio.to_thread(self.index_dir, config, mode)
            if where not in self.served:
                self.served[where] = await asyncio.to_thread(deploy, config, where, mode)
            return self.served[where]

    async def build(self, tool: str, **overrides: Any) -> str:
        """TOOL's build of the configuration (with OVERRIDES for this build only); its one-line summary."""
        async with self.lock:
            await self.config()
            try:
                summary = await asyncio.to_thread(run_build, tool, self.path, {**self.overrides, **overrides})
            except ToolError:
                raise
            except Exception as error:
                raise ToolError(one_line(error)) from None
            self.served = {}
            return summary

    async def web(self) -> WebTools:
        """The checked file's web search settings."""
        return web_tools(await self.config())


def deploy(config: "UltraRAGConfig", where: Path, mode: str | None) -> "ServedPipelines":
    """Open the index at WHERE with the trust the configuration grants. A missing index, one that is not needle's
    (UltraRAG's own FAISS file or bm25s directory) or a broken one is a tool error naming the tool that builds it
    (never the CLI's flags)."""
    from needle_retrieval.index.checks import rebuild_hint
    from needle_retrieval.index.trust import Trust, config_trust
    from needle_retrieval.serve.pipelines import deploy_all

    tool = "bm25_index" if mode == "bm25" or not config.spec.dense else "retriever_index (after retriever_embed)"
    if not where.exists():
        raise ToolError(f"no index at {where} yet: build it with {tool}")
    if not (where / INDEX_POINTER).is_file():
        raise ToolError(
            f"{where} is not a needle index: build one with {tool} (overwrite=true replaces an index UltraRAG built)"
        )
    try:
        trust = Trust.from_environment().merged(config_trust(config.spec, config.target.uri))
        return deploy_all(where, None, trust)
    except Exception as error:
        raise ToolError(one_line(error).replace(rebuild_hint(where), f"rebuild it with {tool}")) from None


def run_build(tool: str, path: Path | None, overrides: dict[str, Any]) -> str:
    """TOOL's build of the configuration (``needle_retrieval.ultrarag.build``, imported on the first build: it loads
    the model libraries); its one-line summary. Its errors name the tools' arguments, not the CLI's flags."""
    from needle_retrieval.ultrarag.build import bm25_with_config, embed_with_config, index_from_embeddings

    jobs = {
        "retriever_embed": embed_with_config,
        "retriever_index": index_from_embeddings,
        "bm25_index": bm25_with_config,
    }
    return jobs[tool](path, overrides)


def web_tools(config: "UltraRAGConfig") -> WebTools:
    """The file's web search settings; every provider whose key resolves gets its own tool."""
    choice = config.websearch
    options = {
        provider: dict(opts)
        for provider, opts in choice.options.items()
        if opts.get("api_key") is not None and opts["api_key"].resolve_value()
    }
    return WebTools(
        options,
        choice.backend,
        retrieve_thread_num=config.retrieve_thread_num,
        trusted=True,
        deploy_search=True,
        retriever_url=config.retriever_url,
    )


@dataclasses.dataclass(frozen=True)
class FileWebTools(WebTools):
    """Web tools listed from the parameter file as parsed at start-up (which providers have a key), searching
    with its fully checked settings (endpoints, retries, threads), loaded on the first search."""

    settings: Callable[[], Awaitable[WebTools]] | None = None

    async def search(
        self, backend: str, queries: list[str], top_k: int | None, threads: int | None, given: Any = None
    ) -> list[list[str]]:
        """``WebTools.search`` with the checked file's settings."""
        checked = await self.settings() if self.settings is not None else self
        return await WebTools.search(checked, backend, queries, top_k, threads, given)


def listed_web_tools(raw: Mapping[str, Any] | None, index: ConfiguredIndex) -> WebTools:
    """The web tools to list: the providers whose key variable is set, and with a file (RAW: as parsed) those whose
    ``websearch_backend_configs`` block gives a key, its ``websearch_backend`` the default and its
    ``retriever_url`` the deploy server; the file's other settings apply once checked."""
    if raw is None:
        return dataclasses.replace(WebTools.from_environment(deploy_search=True), trusted=True)
    from needle_retrieval.ultrarag.websearch import retriever_url

    blocks = raw.get("websearch_backend_configs")
    blocks = blocks if isinstance(blocks, dict) else {}
    keyed = [
        provider
        for provider in WEB_PROVIDERS
        if os.environ.get(KEY_VARIABLES[provider])
        or (isinstance(blocks.get(provider), dict) and isinstance(blocks[provider].get("api_key"), str)
            and blocks[provider]["api_key"])
    ]  # fmt: skip
    backend = raw.get("websearch_backend")
    try:
        url = retriever_url(raw.get("retriever_url"))
    except ValueError:  # the full check refuses it on the index and web tools
        url = retriever_url(None)
    return FileWebTools(
        {provider: {} for provider in keyed},
        backend if backend in WEB_PROVIDERS else "tavily",
        trusted=True,
        deploy_search=True,
        retriever_url=url,
        settings=index.web,
    )


def add_index_tools(server: MCPServer, index: ConfiguredIndex) -> None:
    """Register retriever_init, retriever_embed, retriever_index and bm25_index."""

    async def retriever_init(
        model_name_or_path: str | None = None,
        backend_configs: dict[str, Any] | None = None,
        batch_size: int | None = None,
        corpus_path: str | None = None,
        gpu_ids: Any = None,
        is_multimodal: bool | None = None,
        backend: str | None = None,
        index_backend: str | None = None,
        index_backend_configs: dict[str, Any] | None = None,
        is_demo: bool | None = None,
        collection_name: str | None = None,
    ) -> str:
        """Set the seed's init parameters (each replaces the file's value); the index reopens on the next search."""
        given = dict(zip(INIT_KEYS, (model_name_or_path, backend_configs, batch_size, corpus_path, gpu_ids,
                                     is_multimodal, backend, index_backend, index_backend_configs, is_demo,
                                     collection_name), strict=True))  # fmt: skip
        config = await index.reload({key: value for key, value in given.items() if value is not None})
        return f"retriever ready: backend {config.spec.backend}, index {config.index_dir}"

    async def retriever_embed(
        embedding_path: str | None = None, overwrite: bool = False, is_multimodal: bool = False
    ) -> str:
        """Encode the corpus into embedding_path (.npy); a file there is kept unless overwrite (dense backends)."""
        more = dense_overrides(embedding_path, overwrite, is_multimodal=is_multimodal or None)
        return await index.build("retriever_embed", **more)

    async def retriever_index(
        embedding_path: str | None = None,
        overwrite: bool = False,
        collection_name: Annotated[str, Field(description='"": the file\'s')] = "",
        corpus_path: Annotated[str, Field(description='"": the file\'s')] = "",
    ) -> str:
        """Build the dense index from the vectors in embedding_path (retriever_embed's), without encoding."""
        extra = {"collection_name": collection_name or None, "corpus_path": corpus_path or None}
        return await index.build("retriever_index", **dense_overrides(embedding_path, overwrite, **extra))

    async def bm25_index(overwrite: bool = False) -> str:
        """Build the BM25 index of the corpus (the file's backend_configs.bm25)."""
        return await index.build("bm25_index", overwrite=overwrite)

    for tool in (retriever_init, retriever_embed, retriever_index, bm25_index):
        server.add_tool(tool)


def add_build_tool(server: MCPServer) -> None:
    """Register ``build(parameter_file)``: the server.yaml of the tools this server lists, beside that file."""

    async def build(parameter_file: str) -> str:
        """Write server.yaml beside parameter_file, as every UltraRAG server's build does (`ultrarag build`)."""
        tools = {
            tool.name: list((tool.input_schema or {}).get("properties", {}))
            for tool in await server.list_tools()
            if tool.name != "build"
        }
        try:
            return f"wrote {write_server_yaml(parameter_file, tools)}"
        except (NeedleError, OSError) as error:
            raise ToolError(one_line(error)) from None

    server.add_tool(build)


def dense_overrides(embedding_path: str | None, overwrite: bool, **more: Any) -> dict[str, Any]:
    """The file keys a dense build tool sets: only those the caller gave."""
    given = {"embedding_path": embedding_path, "overwrite": overwrite or None, **more}
    return {key: value for key, value in given.items() if value is not None}


def read_at_start(path: Path) -> dict[str, Any]:
    """The parameter file as parsed YAML, before any protocol: a missing or unreadable file, bad YAML or no
    mapping is a NeedleError (the command prints it and exits)."""
    if not path.is_file():
        raise NeedleError(f"cannot read the parameter file {path}: no such file")
    return read_parameters(path)


def run_stdio(path: Path | None) -> None:
    """Serve UltraRAG's retriever tools over stdin/stdout until the host closes them (PATH: the parameter file,
    None: retriever_init gives the values)."""
    raw = read_at_start(path) if path is not None else None
    index = ConfiguredIndex(path)
    server = mcp_server(IndexTools(open=index.open), listed_web_tools(raw, index))
    add_index_tools(server, index)
    add_build_tool(server)
    asyncio.run(server.run_stdio_async())
