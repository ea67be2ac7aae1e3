"""`needle mcp --config parameter.yaml`: UltraRAG's retriever server on stdio, as an MCP host launches it.

The host that starts this process is trusted (it chose the file and the command), so beside the query tools of
``needle_retrieval.serve.mcp_tools`` and the web tools of ``needle_retrieval.serve.mcp_web_tools`` (whose callers may
pass ``websearch_backend_configs`` here) it lists the seed's index-building tools, with the seed's parameters:

* ``retriever_init(...)``: the seed's init parameters, each replacing the file's value for this process (checked
  as the file is, by ``needle_retrieval.ultrarag.config``); the index is opened anew on the next search;
* ``retriever_embed(embedding_path?, overwrite=False, is_multimodal=False)`` and ``retriever_index(embedding_path?,
  overwrite=False, collection_name="", corpus_path="")``: the dense build ``needle index --config`` runs (vectors to
  ``embedding_path``, reused from there while model and corpus are unchanged, so ``retriever_index`` after
  ``retriever_embed`` only indexes);
* ``bm25_index(overwrite=False)``: the BM25 build of the same file (``backend: bm25``), in its own index directory.

Builds are needle's crash-safe generations: a search during a build answers from the live index, and the next
search after it opens the new one. Nothing is written to stdout but the protocol; logs go to stderr.
"""

import asyncio
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from needle_retrieval.errors import NeedleError
from needle_retrieval.index.trust import Trust, config_trust
from needle_retrieval.serve.mcp import mcp_server
from needle_retrieval.serve.mcp_tools import IndexTools
from needle_retrieval.serve.mcp_web_tools import WebTools
from needle_retrieval.serve.pipelines import ServedPipelines, deploy_all, one_line
from needle_retrieval.ultrarag.build import index_with_config
from needle_retrieval.ultrarag.config import UltraRAGConfig, load_config

INIT_KEYS = (
    "model_name_or_path", "backend_configs", "batch_size", "corpus_path", "gpu_ids", "is_multimodal", "backend",
    "index_backend", "index_backend_configs", "is_demo", "collection_name",
)  # fmt: skip


class ConfiguredIndex:
    """The parameter file, the seed's overrides of it, and the index it names, opened on first use."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.overrides: dict[str, Any] = {}
        self.config: UltraRAGConfig = load_config(self.path)
        self.served: dict[Path, ServedPipelines] = {}  # by index directory
        self.lock = asyncio.Lock()  # one build or open at a time

    def reload(self, overrides: dict[str, Any]) -> None:
        """Check the file with OVERRIDES over it; keep them only when the result is valid."""
        config = load_config(self.path, {**self.overrides, **overrides})
        self.overrides |= overrides
        self.config, self.served = config, {}

    def index_dir(self, mode: str | None) -> Path:
        """Where MODE's index is: BM25's own directory for ``bm25`` (``backend: bm25`` builds it), else the file's."""
        if mode != "bm25" or not self.config.spec.dense:
            return self.config.index_dir
        return load_config(self.path, {**self.overrides, "backend": "bm25"}).index_dir

    async def open(self, mode: str | None) -> ServedPipelines:
        """The index that answers MODE, deployed once (and again after a build)."""
        async with self.lock:
            where = self.index_dir(mode)
            if where not in self.served:
                try:
                    trust = Trust.from_environment().merged(config_trust(self.config.spec, self.config.target.uri))
                    self.served[where] = await asyncio.to_thread(deploy_all, where, None, trust)
                except Exception as error:
                    raise ToolError(f"{one_line(error)} (build it with retriever_index or bm25_index)") from None
            return self.served[where]

    async def build(self, **overrides: Any) -> str:
        """Build the index the config (with OVERRIDES for this build only) describes; a one-line summary."""
        async with self.lock:
            try:
                config_path, merged = self.path, {**self.overrides, **overrides}
                manifest, out = await asyncio.to_thread(index_with_config, config_path, None, merged)
            except Exception as error:
                raise ToolError(one_line(error)) from None
            self.served = {}
            return f"indexed {manifest.documents} documents ({', '.join(manifest.modes)}) into {out}"


def web_tools(config: UltraRAGConfig) -> WebTools:
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
        try:
            index.reload({key: value for key, value in given.items() if value is not None})
        except (NeedleError, ValueError, OSError) as error:
            raise ToolError(one_line(error)) from None
        return f"retriever ready: backend {index.config.spec.backend}, index {index.config.index_dir}"

    async def retriever_embed(
        embedding_path: str | None = None, overwrite: bool = False, is_multimodal: bool = False
    ) -> str:
        """Embed the corpus into embedding_path (.npy) and index it (dense backends)."""
        return await index.build(**dense_overrides(embedding_path, overwrite, is_multimodal=is_multimodal or None))

    async def retriever_index(
        embedding_path: str | None = None,
        overwrite: bool = False,
        collection_name: Annotated[str, Field(description='"": the file\'s')] = "",
        corpus_path: Annotated[str, Field(description='"": the file\'s')] = "",
    ) -> str:
        """Build the dense index from the corpus (vectors reused from embedding_path when they match)."""
        extra = {"collection_name": collection_name or None, "corpus_path": corpus_path or None}
        return await index.build(**dense_overrides(embedding_path, overwrite, **extra))

    async def bm25_index(overwrite: bool = False) -> str:
        """Build the BM25 index of the corpus (the file's backend_configs.bm25)."""
        return await index.build(backend="bm25", overwrite=overwrite)

    for tool in (retriever_init, retriever_embed, retriever_index, bm25_index):
        server.add_tool(tool)


def dense_overrides(embedding_path: str | None, overwrite: bool, **more: Any) -> dict[str, Any]:
    """The file keys a dense build tool sets: only those the caller gave."""
    given = {"embedding_path": embedding_path, "overwrite": overwrite or None, **more}
    return {key: value for key, value in given.items() if value is not None}


def run_stdio(path: Path) -> None:
    """Serve UltraRAG's retriever tools over stdin/stdout until the host closes them."""
    index = ConfiguredIndex(path)
    server = mcp_server(IndexTools(open=index.open), web_tools(index.config))
    add_index_tools(server, index)
    asyncio.run(server.run_stdio_async())
