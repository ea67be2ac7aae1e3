"""The MCP tools of UltraRAG's retriever server, by its names, parameters and shapes, plus needle's own richer ones.

UltraRAG's retriever *is* an MCP server; these are its query tools, with its parameters, defaults and outputs:

* ``retriever_search(query_list, top_k=5, query_instruction="", collection_name="")`` -> ``{"ret_psg": [[passage,
  ...], ...]}``, what ``POST /search`` answers (``needle_retrieval.serve.ultrarag``: the index's dense part, as
  UltraRAG's retriever is dense, unless the server names another mode; its rules for ``collection_name``): both run
  the same batch pipeline through the same feed and runner, and an instruction replaces the index's own as there
  (``""``, UltraRAG's default, keeps it: ``needle_retrieval.pipelines.feed.ultrarag_instruction``);
* ``retriever_batch_search(batch_query_list, ...)`` -> ``{"ret_psg_ls": [[[passage, ...], ...], ...]}``;
* ``retriever_project_memory_search(query_list, top_k=5, query_instruction="", current_user_id="")`` ->
  ``{"project_memory_content": [[passage, ...], ...]}``: ``retriever_search`` in collection ``user_<id>``
  (``user_default`` for an empty id), which a FAISS index ignores as UltraRAG's FAISS backend does and which names
  the collection on Milvus;
* ``bm25_search(query_list, top_k=5)`` -> ``{"ret_psg": ...}`` from the index's BM25 part;
* the web search tools and ``retriever_deploy_search`` of ``needle_retrieval.serve.mcp_web_tools``.

Each list has ``top_k`` passages whenever the index holds that many documents, as UltraRAG's (its prompt templates
index into them): a list the search left short is filled with the corpus's first documents that are not in it
(``needle_retrieval.serve.corpus_head``). Passages are the ``contents`` text, as UltraRAG returns them.

needle's own tools keep ids, scores and text: ``needle_<mode>_search(query, top_k?, query_instruction?, tenant?)`` ->
``{"documents": [{"id", "score", "content"}, ...]}`` (``needle search --json``'s shape), one per served pipeline, the
hits only; their instruction follows needle's rule (left out: the index's; ``""``: none), and a tenant keeps the
search to its documents (``needle search --tenant``), as ``POST /<mode>_search/run``. On a server started with
`needle serve --tenant T` every query tool searches T's documents only, and a ``tenant`` other than T is refused.

Arguments are taken as UltraRAG's FastMCP server takes them (``needle_retrieval.serve.mcp``): an unknown one and a
string for a list (``query_list: "q"``) are refused, ``top_k: "5"`` is read as 5. Our limits stay: ``top_k`` from 1
to ``MAX_TOP_K``, at least one query, each not blank. A refused call is a tool error with the REST route's message.
One call takes at most ``MAX_QUERIES`` queries in all (``retriever_batch_search``: summed over the lists) and asks
for at most ``MAX_PASSAGES`` passages, as ``POST /search``: past it, a ``413:`` tool error.

Nothing heavy is imported at module level (Haystack, the pipelines, FastAPI): ``needle mcp`` lists these tools
before the model libraries load, and the searches import them when they first run.
"""

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from components.checks import MAX_TOP_K
from components.deploy_protocol import BatchPassages, Passages
from needle_retrieval.defaults import DEFAULT_TOP_K, INSTRUCTION_HELP

if TYPE_CHECKING:
    from haystack import Document

    from needle_retrieval.serve.pipelines import ServedPipelines
    from needle_retrieval.serve.ultrarag import UltraRAGSearch

TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description="passages per query")]
Queries = Annotated[list[str], Field(description="the queries")]
Instruction = Annotated[str, Field(description=INSTRUCTION_HELP)]
Collection = Annotated[str, Field(description='ignored on FAISS; on Milvus "" or this index\'s collection')]
UserId = Annotated[str, Field(description='the user whose memory to search ("": default)')]
WEB_PROVIDERS = ("exa", "tavily", "zhipuai")


class ProjectMemory(BaseModel):
    """``Passages`` from the user's project memory."""

    project_memory_content: list[list[str]]


class Hits(BaseModel):
    """needle's hits for one query: id, score and text, best first."""

    documents: list[dict[str, Any]]


@contextmanager
def http_errors() -> Iterator[None]:
    """A REST check's or search's ``HTTPException`` as a tool error: ``<status>: <detail>``."""
    from fastapi import HTTPException

    try:
        yield
    except HTTPException as error:
        raise ToolError(f"{error.status_code}: {error.detail}") from None


@dataclass
class IndexTools:
    """What the query tools search: served pipelines and the UltraRAG searches over them, opened on first use.

    ``open(mode)`` returns the served index that answers MODE (None: UltraRAG's ``retriever_search``). ``needle
    serve`` hands one index that is open already; ``needle mcp`` opens the directory its parameter file names for
    the mode (a dense backend's, or BM25's own) when a tool first needs it, and again after it rebuilds that index.
    """

    open: Callable[[str | None], Awaitable["ServedPipelines"]]
    # by mode ("" for retriever_search's): the search and the index it was built on
    searches: dict[str, tuple["ServedPipelines", "UltraRAGSearch"]] = field(default_factory=dict)

    async def search(self, mode: str | None) -> tuple["ServedPipelines", "UltraRAGSearch"]:
        """The UltraRAG search of MODE (None: ``retriever_search``'s) and its index, built once per opened index."""
        from needle_retrieval.serve.ultrarag import deploy_ultrarag

        served = await self.open(mode)
        key = mode or ""
        if key not in self.searches or self.searches[key][0] is not served:
            if mode is not None and mode not in served.manifest.modes:
                have = ", ".join(served.manifest.modes)
                tool = "bm25_index" if mode == "bm25" else "retriever_index"
                raise ToolError(f"this index has no {mode} part (it has: {have}); build it with {tool}")
            self.searches[key] = served, await asyncio.to_thread(deploy_ultrarag, served, mode)
        return self.searches[key]

    async def passages(
        self, mode: str | None, queries: list[str], top_k: int, instruction: str = "", collection: str = ""
    ) -> list[list[str]]:
        """UltraRAG's answer for QUERIES: the checks and the pipeline ``POST /search`` runs, as passage texts, each
        list filled to ``top_k`` where the index holds that many documents."""
        from needle_retrieval.serve.ultrarag import UltraRAGSearchRequest, check_search_request

        _, search = await self.search(mode)
        request = UltraRAGSearchRequest.model_construct(
            query_list=queries, top_k=top_k, query_instruction=instruction, collection_name=collection
        )
        with http_errors():
            check_search_request(request, search.collections)
            hits = await search.search(queries, top_k, instruction)  # short lists filled (UltraRAGSearch.search)
        return [texts(docs) for docs in hits]


def opened(served: "ServedPipelines") -> Callable[[str | None], Awaitable["ServedPipelines"]]:
    """``IndexTools.open`` for an index that is open already (``needle serve``): every mode searches it."""

    async def already(mode: str | None) -> "ServedPipelines":
        return served

    return already


def texts(documents: list["Document"]) -> list[str]:
    """Passage texts as UltraRAG returns them (its ``contents``)."""
    return [doc.content or "" for doc in documents]


def check_count(count: int, top_k: int, name: str = "query_list") -> None:
    """``check_batch_size`` as a tool error: ``413: ...`` past MAX_QUERIES queries or MAX_PASSAGES passages."""
    from needle_retrieval.serve.run import check_batch_size

    with http_errors():
        check_batch_size(count, top_k, name)


def nonempty(queries: list[str]) -> list[str]:
    """QUERIES, refused when there are none (UltraRAG would search for nothing)."""
    if not queries:
        raise ToolError("422: query_list is empty; give at least one query")
    return queries


def add_search_tools(server: MCPServer, index: IndexTools) -> None:
    """Register ``retriever_search``, ``retriever_batch_search``, ``retriever_project_memory_search`` and
    ``bm25_search``."""

    async def retriever_search(
        query_list: Queries,
        top_k: TopK = DEFAULT_TOP_K,
        query_instruction: Instruction = "",
        collection_name: Collection = "",
    ) -> Passages:
        """Search the index (its dense part, as UltraRAG's retriever); top_k passages per query."""
        found = await index.passages(None, nonempty(query_list), top_k, query_instruction, collection_name)
        return Passages(ret_psg=found)

    async def retriever_batch_search(
        batch_query_list: Annotated[list[list[str]], Field(description="lists of queries")],
        top_k: TopK = DEFAULT_TOP_K,
        query_instruction: Instruction = "",
        collection_name: Collection = "",
    ) -> BatchPassages:
        """``retriever_search`` for each list of queries, all in one batch; an empty list gets an empty answer."""
        check_count(max(len(batch_query_list), sum(map(len, batch_query_list))), top_k, "batch_query_list")
        flat = [query for queries in batch_query_list for query in queries]
        found = await index.passages(None, flat, top_k, query_instruction, collection_name) if flat else []
        answers, start = [], 0
        for queries in batch_query_list:
            answers.append(found[start : start + len(queries)])
            start += len(queries)
        return BatchPassages(ret_psg_ls=answers)

    async def retriever_project_memory_search(
        query_list: Queries,
        top_k: TopK = DEFAULT_TOP_K,
        query_instruction: Instruction = "",
        current_user_id: UserId = "",
    ) -> ProjectMemory:
        """``retriever_search`` in the user's project memory, collection ``user_<current_user_id>`` (ignored on
        FAISS)."""
        collection = f"user_{current_user_id.strip() or 'default'}"
        found = await index.passages(None, nonempty(query_list), top_k, query_instruction, collection)
        return ProjectMemory(project_memory_content=found)

    async def bm25_search(query_list: Queries, top_k: TopK = DEFAULT_TOP_K) -> Passages:
        """Keyword search with the index's BM25 part; top_k passages per query."""
        return Passages(ret_psg=await index.passages("bm25", nonempty(query_list), top_k))

    for tool in (retriever_search, retriever_batch_search, retriever_project_memory_search, bm25_search):
        server.add_tool(tool, structured_output=True)


def add_needle_tools(server: MCPServer, served: "ServedPipelines") -> None:
    """Register ``needle_<mode>_search`` for every served pipeline: ids, scores and text of the hits."""
    for name in served.runners:
        server.add_tool(
            needle_tool(served, name),
            name=f"needle_{name}",
            description=f"Search the index with needle's {name} pipeline: id, score and text per hit, best first.",
            structured_output=True,
        )


def needle_tool(served: "ServedPipelines", name: str) -> Callable[..., Awaitable[Hits]]:
    """The tool function of one served pipeline: the REST route's checks and run, its hits as JSON."""
    from needle_retrieval.pipelines.feed import INSTRUCTION_FIELD_HELP  # served pipelines exist: it is loaded
    from needle_retrieval.serve.run import TENANT_FIELD_HELP

    runner = served.runners[name]

    async def search(
        query: Annotated[str, Field(description="the query: not blank, at most 1 MiB characters")],
        top_k: Annotated[int | None, Field(ge=1, le=MAX_TOP_K, description="hits (default: the index's)")] = None,
        query_instruction: Annotated[str | None, Field(description=INSTRUCTION_FIELD_HELP)] = None,
        tenant: Annotated[str | None, Field(description=TENANT_FIELD_HELP)] = None,
    ) -> Hits:
        from needle_retrieval.search.hits import as_hits
        from needle_retrieval.serve.run import (
            check_request_instruction,
            check_request_query,
            request_filters,
            run_search,
        )

        with http_errors():
            check_request_query(query)
            check_request_instruction(query_instruction)
            filters = request_filters(tenant, served.manifest, served.index_dir, served.tenant)
            result = await run_search(name, runner, query, top_k, query_instruction, filters)
        documents = result[runner.plan.answering][runner.plan.answer_socket]
        return Hits(documents=[dict(hit) for hit in as_hits(documents)])

    return search
