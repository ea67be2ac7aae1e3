"""The MCP tools of UltraRAG's retriever server, by the seed's names and shapes, plus needle's own richer ones.

UltraRAG's retriever *is* an MCP server; these are its query tools, with its parameters, defaults and outputs:

* ``retriever_search(query_list, top_k=5, query_instruction="", collection_name="")`` -> ``{"ret_psg": [[passage,
  ...], ...]}`` from the index's best mode (hybrid when it has dense and BM25 parts), exactly what ``POST /search``
  answers: both run the same batch pipeline through the same feed and runner (``needle_retrieval.pipelines.feed``,
  ``needle_retrieval.pipelines.runner``), and an instruction replaces the index's own as there (``""`` keeps it);
* ``retriever_batch_search(batch_query_list, ...)`` -> ``{"ret_psg_ls": [[[passage, ...], ...], ...]}``;
* ``bm25_search(query_list, top_k=5)`` -> ``{"ret_psg": ...}`` from the index's BM25 part;
* ``retriever_websearch`` / ``retriever_batch_websearch`` (``websearch_backend``: tavily | exa | zhipuai) and the
  seed document's ``retriever_exa_search`` / ``retriever_tavily_search`` / ``retriever_zhipuai_search``, each with
  ``retrieve_thread_num``; listed only where web search is configured (``WebTools``);
* ``retriever_deploy_search(retriever_url, query_list, top_k=5, query_instruction="")``: it fetches a URL the caller
  names, so it is listed only when the operator enables it.

Passages are the ``contents`` text, as UltraRAG returns them. needle's own tools keep ids, scores and text:
``needle_<mode>_search(query, top_k?)`` -> ``{"documents": [{"id", "score", "content"}, ...]}`` (``needle search
--json``'s shape), one per served pipeline. A refused call is a tool error with the REST route's message. One call
takes at most ``MAX_QUERIES`` queries in all (``retriever_batch_search`` and ``retriever_batch_websearch``: summed
over the lists) and asks for at most ``MAX_PASSAGES`` passages, as ``POST /search``: past it, a ``413:`` tool error.
"""

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import HTTPException
from haystack import Document
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from components.checks import MAX_TOP_K
from needle_retrieval.defaults import DEFAULT_TOP_K
from needle_retrieval.search.hits import as_hits
from needle_retrieval.serve.pipelines import ServedPipelines, one_line
from needle_retrieval.serve.run import check_batch_size, check_request_query, run_search
from needle_retrieval.serve.ultrarag import (
    INSTRUCTION_HELP,
    UltraRAGSearch,
    UltraRAGSearchRequest,
    check_search_request,
    deploy_ultrarag,
)

TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description="passages per query")]
Queries = Annotated[list[str] | str, Field(description="the queries (one string is taken as a list of one)")]
Instruction = Annotated[str, Field(description=INSTRUCTION_HELP)]
Collection = Annotated[str, Field(description='"" or this index\'s name (or its Milvus collection)')]
WEB_PROVIDERS = ("exa", "tavily", "zhipuai")


class Passages(BaseModel):
    """One list of passage texts per query, best first, in query order."""

    ret_psg: list[list[str]]


class BatchPassages(BaseModel):
    """``Passages`` for each list of queries."""

    ret_psg_ls: list[list[list[str]]]


class Hits(BaseModel):
    """needle's hits for one query: id, score and text, best first."""

    documents: list[dict[str, Any]]


@dataclass
class IndexTools:
    """What the query tools search: served pipelines and the UltraRAG searches over them, opened on first use.

    ``open(mode)`` returns the served index that answers MODE (None: the index's best mode). ``needle serve`` hands
    one index that is open already; ``needle mcp`` opens the directory its parameter file names for the mode (a
    dense backend's, or BM25's own) when a tool first needs it, and again after it rebuilds that index.
    """

    open: Callable[[str | None], Awaitable[ServedPipelines]]
    # by mode ("" for the best mode): the search and the index it was built on
    searches: dict[str, tuple[ServedPipelines, UltraRAGSearch]] = field(default_factory=dict)

    async def search(self, mode: str | None) -> UltraRAGSearch:
        """The UltraRAG search of MODE (None: the index's best mode), built once per opened index."""
        served = await self.open(mode)
        key = mode or ""
        if key not in self.searches or self.searches[key][0] is not served:
            if mode is not None and mode not in served.manifest.modes:
                have = ", ".join(served.manifest.modes)
                raise ToolError(f"this index has no {mode} part (it has: {have}); build it with --{mode}")
            self.searches[key] = served, await asyncio.to_thread(deploy_ultrarag, served, mode)
        return self.searches[key][1]

    async def passages(
        self, mode: str | None, queries: list[str], top_k: int, instruction: str = "", collection: str = ""
    ) -> list[list[str]]:
        """UltraRAG's answer for QUERIES: the checks and the pipeline ``POST /search`` runs, as passage texts."""
        search = await self.search(mode)
        request = UltraRAGSearchRequest.model_construct(
            query_list=queries, top_k=top_k, query_instruction=instruction, collection_name=collection
        )
        try:
            check_search_request(request, search.collections)
            hits = await search.search(queries, top_k, instruction)
        except HTTPException as error:
            raise ToolError(f"{error.status_code}: {error.detail}") from None
        return [texts(docs) for docs in hits]


def opened(served: ServedPipelines) -> Callable[[str | None], Awaitable[ServedPipelines]]:
    """``IndexTools.open`` for an index that is open already (``needle serve``): every mode searches it."""

    async def already(mode: str | None) -> ServedPipelines:
        return served

    return already


def texts(documents: list[Document]) -> list[str]:
    """Passage texts as UltraRAG returns them (its ``contents``)."""
    return [doc.content or "" for doc in documents]


def check_count(count: int, top_k: int, name: str = "query_list") -> None:
    """``check_batch_size`` as a tool error: ``413: ...`` past MAX_QUERIES queries or MAX_PASSAGES passages."""
    try:
        check_batch_size(count, top_k, name)
    except HTTPException as error:
        raise ToolError(f"{error.status_code}: {error.detail}") from None


def as_list(queries: list[str] | str) -> list[str]:
    """The seed's tools take one string as a list of one; an empty list is refused."""
    listed = [queries] if isinstance(queries, str) else list(queries)
    if not listed:
        raise ToolError("422: query_list is empty; give at least one query")
    return listed


def add_search_tools(server: MCPServer, index: IndexTools) -> None:
    """Register ``retriever_search``, ``retriever_batch_search`` and ``bm25_search``."""

    async def retriever_search(
        query_list: Queries,
        top_k: TopK = DEFAULT_TOP_K,
        query_instruction: Instruction = "",
        collection_name: Collection = "",
    ) -> Passages:
        """Search the index (its best mode: hybrid when it has dense and BM25 parts); passages per query."""
        found = await index.passages(None, as_list(query_list), top_k, query_instruction, collection_name)
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

    async def bm25_search(query_list: Queries, top_k: TopK = DEFAULT_TOP_K) -> Passages:
        """Keyword search with the index's BM25 part; passages per query."""
        return Passages(ret_psg=await index.passages("bm25", as_list(query_list), top_k))

    for tool in (retriever_search, retriever_batch_search, bm25_search):
        server.add_tool(tool, structured_output=True)


def add_needle_tools(server: MCPServer, served: ServedPipelines) -> None:
    """Register ``needle_<mode>_search`` for every served pipeline: ids, scores and text of the hits."""
    for name in served.runners:
        server.add_tool(
            needle_tool(served, name),
            name=f"needle_{name}",
            description=f"Search the index with needle's {name} pipeline: id, score and text per hit, best first.",
            structured_output=True,
        )


def needle_tool(served: ServedPipelines, name: str) -> Callable[..., Awaitable[Hits]]:
    """The tool function of one served pipeline: the REST route's checks and run, its hits as JSON."""
    runner = served.runners[name]

    async def search(
        query: Annotated[str, Field(description="the query: not blank, at most 1 MiB characters")],
        top_k: Annotated[int | None, Field(ge=1, le=MAX_TOP_K, description="hits (default: the index's)")] = None,
    ) -> Hits:
        try:
            check_request_query(query)
            result = await run_search(name, runner, query, top_k)
        except HTTPException as error:
            raise ToolError(f"{error.status_code}: {error.detail}") from None
        documents = result[runner.plan.answering][runner.plan.answer_socket]
        return Hits(documents=[dict(hit) for hit in as_hits(documents)])

    return search


def tool_failure(error: Exception) -> ToolError:
    """A component's refusal or failure as a tool error, on one line."""
    return ToolError(one_line(error))
