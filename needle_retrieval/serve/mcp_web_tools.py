"""UltraRAG's web search and deploy-search MCP tools, over needle's web search components and remote retriever.

``WebTools`` holds the operator's settings: which providers have keys, their options (``WebBatchSearch``'s init
parameters: ``api_key``, ``base_url``, ``retries``, ``base_delay``, ``timeout``, ``search_kwargs`` and the
provider's own ``backend_options``), the default ``websearch_backend`` and ``retrieve_thread_num``. It comes from
UltraRAG's parameter.yaml (``websearch_backend``, ``websearch_backend_configs``) or, without one, from the
providers' key variables (``EXA_API_KEY``, ``TAVILY_API_KEY``, ``ZHIPUAI_API_KEY``) at their public endpoints.

A caller's ``websearch_backend_configs`` can name an endpoint and a key, so over HTTP (``needle serve``) only an
empty one is taken; on stdio (``needle mcp``) the launcher is trusted and its configs go over the file's.

Every call takes at most ``MAX_QUERIES`` queries (summed over the lists of a batch tool), as the index tools do: each
query is a paid request to the provider. Each provider request has the components' deadline and size limit
(``components.http_limits``).

Arguments are taken as UltraRAG's FastMCP tools take them (``needle_retrieval.serve.mcp``): ``query_list`` is a
list (a string is refused), an undeclared argument is refused. The components load when a tool first runs.
"""

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from components.checks import MAX_TOP_K
from components.deploy_protocol import BatchPassages, Passages
from needle_retrieval.defaults import DEFAULT_TOP_K
from needle_retrieval.errors import one_line
from needle_retrieval.serve.mcp_tools import (
    WEB_PROVIDERS,
    Instruction,
    Queries,
    check_count,
    nonempty,
    texts,
)

if TYPE_CHECKING:
    from haystack import Document

    from components.websearch import WebBatchSearch

KEY_VARIABLES = {"exa": "EXA_API_KEY", "tavily": "TAVILY_API_KEY", "zhipuai": "ZHIPUAI_API_KEY"}
ROUTER_OPTIONS = ("api_key", "base_url", "retries", "base_delay", "timeout", "on_error", "search_kwargs")
WebTopK = Annotated[int | None, Field(ge=1, le=100, description="results per query (provider limits apply)")]
Threads = Annotated[int | None, Field(ge=1, le=64, description="queries in flight at once")]
Backend = Annotated[str, Field(description="tavily | exa | zhipuai")]
Configs = Annotated[dict[str, Any] | None, Field(description="per-provider options (stdio only)")]


@dataclass(frozen=True)
class WebTools:
    """The operator's web search settings (see the module docstring)."""

    options: dict[str, dict[str, Any]]  # provider -> WebBatchSearch init parameters
    backend: str = "tavily"
    retrieve_thread_num: int = 1
    trusted: bool = False  # stdio: a caller's websearch_backend_configs apply
    deploy_search: bool = False  # list retriever_deploy_search (it fetches a URL the caller names)
    retriever_url: str = field(default="http://127.0.0.1:64501")

    @classmethod
    def from_environment(cls, deploy_search: bool = False) -> "WebTools":
        """The providers whose key variable is set, at their public endpoints."""
        options: dict[str, dict[str, Any]] = {p: {} for p, var in KEY_VARIABLES.items() if os.environ.get(var)}
        return cls(options, next(iter(options), "tavily"), deploy_search=deploy_search)

    def component(self, backend: str, top_k: int | None, threads: int | None, given: Any) -> "WebBatchSearch":
        """A WebBatchSearch for BACKEND with the caller's top_k, threads and (trusted only) configs."""
        from components.websearch import WebBatchSearch

        if backend not in WEB_PROVIDERS:
            raise ToolError(f"websearch_backend must be one of {', '.join(WEB_PROVIDERS)}, got {backend!r}")
        if given and not self.trusted:
            raise ToolError("websearch_backend_configs is set by the server's operator here; send {} or omit it")
        if backend not in self.options and not (self.trusted and given):
            configured = ", ".join(self.options) or "none"
            raise ToolError(f"web search through {backend} is not configured here (configured: {configured})")
        merged = {**self.options.get(backend, {}), **((given or {}).get(backend) or {})}
        router = {key: merged[key] for key in ROUTER_OPTIONS if key in merged}
        extra = {key: value for key, value in merged.items() if key not in ROUTER_OPTIONS}
        threads = threads or self.retrieve_thread_num
        try:
            return WebBatchSearch(
                backend, top_k=top_k or 5, retrieve_thread_num=threads, backend_options=extra, **router
            )
        except ValueError as error:
            raise ToolError(one_line(error)) from None

    async def search(
        self, backend: str, queries: list[str], top_k: int | None, threads: int | None, given: Any = None
    ) -> list[list[str]]:
        """Passage texts per query from BACKEND; a provider's failure is a tool error naming it."""
        check_count(len(queries), top_k or 5)
        search = self.component(backend, top_k, threads, given)
        try:
            found: list[list[Document]] = (await search.run_async(queries=queries))["documents"]
        except Exception as error:
            raise ToolError(one_line(error)) from None
        return [texts(docs) for docs in found]


def add_web_tools(server: MCPServer, web: WebTools) -> None:
    """Register the web search tools (UltraRAG HEAD's two and the seed document's one per configured provider)
    and, when enabled, ``retriever_deploy_search``."""

    async def retriever_websearch(
        query_list: Queries,
        top_k: WebTopK = 5,
        retrieve_thread_num: Threads = 1,
        websearch_backend: Backend = web.backend,
        websearch_backend_configs: Configs = None,
    ) -> Passages:
        """Search the web through websearch_backend; passages per query, in query order."""
        queries = nonempty(query_list)
        found = await web.search(websearch_backend, queries, top_k, retrieve_thread_num, websearch_backend_configs)
        return Passages(ret_psg=found)

    async def retriever_batch_websearch(
        batch_query_list: Annotated[list[list[str]], Field(description="lists of queries")],
        top_k: WebTopK = 5,
        retrieve_thread_num: Threads = 1,
        websearch_backend: Backend = web.backend,
        websearch_backend_configs: Configs = None,
    ) -> BatchPassages:
        """``retriever_websearch`` for each list of queries."""
        check_count(max(len(batch_query_list), sum(map(len, batch_query_list))), top_k or 5, "batch_query_list")
        answers = []
        for queries in batch_query_list:
            given = websearch_backend_configs
            answers.append(
                await web.search(websearch_backend, queries, top_k, retrieve_thread_num, given) if queries else []
            )
        return BatchPassages(ret_psg_ls=answers)

    if web.options or web.trusted:  # a web tool nobody can call would only mislead the model
        for tool in (retriever_websearch, retriever_batch_websearch):
            server.add_tool(tool, structured_output=True)
    for provider in web.options:
        server.add_tool(provider_tool(web, provider), name=f"retriever_{provider}_search", structured_output=True)
    if web.deploy_search:
        server.add_tool(deploy_search_tool(web), name="retriever_deploy_search", structured_output=True)


def provider_tool(web: WebTools, provider: str) -> Any:
    """The seed document's ``retriever_<provider>_search(query_list, top_k=5, retrieve_thread_num=1)``."""

    async def search(query_list: Queries, top_k: WebTopK = 5, retrieve_thread_num: Threads = 1) -> Passages:
        return Passages(ret_psg=await web.search(provider, nonempty(query_list), top_k, retrieve_thread_num))

    search.__doc__ = f"Search the web through {provider}; passages per query, in query order."
    return search


def deploy_search_tool(web: WebTools) -> Any:
    """``retriever_deploy_search(retriever_url, query_list, top_k=DEFAULT_TOP_K, query_instruction="")`` over the remote
    retriever (timeouts, retries, checked answers)."""

    async def search(
        retriever_url: Annotated[str, Field(description="a server speaking UltraRAG's POST /search")],
        query_list: Queries,
        top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = DEFAULT_TOP_K,
        query_instruction: Instruction = "",
    ) -> Passages:
        """Ask a deployed retriever server (UltraRAG's or needle serve's) for passages per query."""
        from components.retrievers.remote import UltraRAGRemoteBatchRetriever

        check_count(len(nonempty(query_list)), top_k)
        try:
            client = UltraRAGRemoteBatchRetriever(
                retriever_url or web.retriever_url, query_instruction=query_instruction
            )
            found = (await client.run_async(queries=query_list, top_k=top_k))["documents"]
        except (ValueError, RuntimeError) as error:
            raise ToolError(one_line(error)) from None
        return Passages(ret_psg=[texts(docs) for docs in found])

    return search
