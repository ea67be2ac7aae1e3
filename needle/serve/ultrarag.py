"""UltraRAG's deploy protocol on `needle serve`: ``POST /search`` as the seed's ``retriever_deploy_search`` calls it.

``{"query_list": [...], "top_k": 5, "query_instruction": "", "collection_name": ""}`` ->
``{"ret_psg": [[passage, ...], ...]}``: one list of passage texts per query, best first, in query order. The
queries run in one batch pipeline of the index's best mode (hybrid when it has dense and BM25 parts, else its
mode), built and probed at start-up like the other pipelines.

One request holds at most ``MAX_QUERIES`` (10,000) queries and asks for at most ``MAX_PASSAGES`` (1,000,000)
passages, queries x ``top_k``; past either it is a 413 naming the limit. The search and the JSON of its answer are
made in the search pool (``needle.serve.run``), never on the event loop.

``query_instruction`` is put in front of each query for the dense (embedding) part only, as UltraRAG prefixes
queries for instruction-tuned embedders (e.g. ``"Represent this sentence for searching relevant passages: "``);
BM25 and the hybrid's query-length weighting see each query as sent. ``collection_name`` may be ``""``, the
index directory's name or, on Milvus, its collection (or the alias over a server's generations); anything else
is a 404, since this server holds one index.
"""

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import Response
from haystack import Document, Pipeline
from pydantic import BaseModel, ConfigDict, Field

from components.checks import MAX_PASSAGES, MAX_QUERIES, MAX_QUERY_CHARS, MAX_TOP_K, check_unicode
from needle.errors import NeedleError
from needle.index.templates import fill_search_pipeline
from needle.pipelines import files as pf
from needle.pipelines.feed import SearchPlan
from needle.search.searcher import BATCH_MODES, best_mode
from needle.serve.pipelines import PROBE_QUERY, ServedPipelines, one_line, root_cause, share_stores
from needle.serve.run import check_batch_size, check_request_query, off_loop, run_search

GENERATION_SUFFIX = re.compile(r"_gen\d{6}$")  # a server collection's generation: NAME_genNNNNNN behind alias NAME


class UltraRAGSearchRequest(BaseModel):
    """UltraRAG's deploy-search body; unknown fields and loose types are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query_list: list[str] = Field(
        min_length=1,
        description=f"the queries, at most {MAX_QUERIES:,} (and {MAX_PASSAGES:,} passages, queries x top_k) per "
        "request, each 1 to 1 MiB characters, not blank",
    )
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K, description="passages per query")
    query_instruction: str = Field(
        default="", max_length=MAX_QUERY_CHARS, description="put in front of each query for the dense part only"
    )
    collection_name: str = Field(default="", description='"" or this index\'s name (or its Milvus collection)')


class UltraRAGSearchResponse(BaseModel):
    """One list of passage texts per query, best first, in query order."""

    ret_psg: list[list[str]]


@dataclass(frozen=True)
class UltraRAGSearch:
    """The pipeline ``/search`` runs (a batch pipeline where the mode has one) and the names it answers to."""

    name: str
    pipeline: Pipeline
    plan: SearchPlan
    batched: bool
    collections: frozenset[str]

    async def search(self, queries: list[str], top_k: int, instruction: str) -> list[list[Document]]:
        """Top-k documents per query, in query order: one batch run, or one run per query (concurrently)."""
        if self.batched:
            result = await run_search(self.name, self.pipeline, self.plan, queries, top_k, instruction)
            batches: list[list[Document]] = result[self.plan.answering]["documents"]
            return batches
        runs = [run_search(self.name, self.pipeline, self.plan, q, top_k, instruction) for q in queries]
        return [result[self.plan.answering]["documents"] for result in await asyncio.gather(*runs)]


def collection_names(served: ServedPipelines) -> frozenset[str]:
    """What ``collection_name`` may say: nothing, the index directory's name, its Milvus collection and alias."""
    names = {"", served.index_dir.resolve().name}
    if served.manifest.collection:
        names |= {served.manifest.collection, GENERATION_SUFFIX.sub("", served.manifest.collection)}
    return frozenset(names)


def deploy_ultrarag(served: ServedPipelines, mode: str | None = None) -> UltraRAGSearch:
    """Build, warm up and probe MODE's batch pipeline (default: the index's best mode), or reuse its served
    pipeline when the mode has none."""
    manifest = served.manifest
    mode = mode or best_mode(manifest)
    name = f"{mode}_search"
    if mode not in BATCH_MODES[manifest.store]:
        single = served.registry.get(name).pipeline
        return UltraRAGSearch(name, single, served.plans[name], False, collection_names(served))
    name = f"{mode}_batch_search"
    try:
        data = fill_search_pipeline(
            served.index_dir, manifest, manifest.template(mode, batch=True), fusion=served.fusion
        )
        pipeline = pf.build(data)
        share_stores(pipeline, served.stores)
        pipeline.warm_up()
        plan = SearchPlan.of(data, "queries")
        pipeline.run(plan.feed([PROBE_QUERY], None), include_outputs_from={plan.answering})
    except Exception as error:
        cause = one_line(root_cause(error))
        where = f"pipeline {name} (UltraRAG /search)"
        raise NeedleError(f"{where} failed to deploy from {served.index_dir}: {cause}") from error
    return UltraRAGSearch(name, pipeline, plan, True, collection_names(served))


def check_search_request(request: UltraRAGSearchRequest, collections: frozenset[str]) -> None:
    """413 past the batch limits, 413/422 for a bad query or instruction (naming its position), 404 for another
    collection."""
    check_batch_size(len(request.query_list), request.top_k)
    for i, query in enumerate(request.query_list):
        check_request_query(query, f"query_list[{i}]")
    try:
        check_unicode(request.query_instruction, "query_instruction")
    except ValueError as error:
        raise HTTPException(422, one_line(error)) from error
    if request.collection_name not in collections:
        known = ", ".join(repr(name) for name in sorted(collections))
        raise HTTPException(404, f"collection_name {request.collection_name!r} is not served here; use one of {known}")


def answer_json(hits: list[list[Document]]) -> bytes:
    """``{"ret_psg": [[passage, ...], ...]}`` as FastAPI would write it, made in the search pool one query at a time:
    for 10,000 queries it is megabytes, and one ``json.dumps`` of it all would hold the GIL (and so the event loop)
    for most of a second."""
    lists = [_passages_json(docs) for docs in hits]
    return ('{"ret_psg":[' + ",".join(lists) + "]}").encode()


def _passages_json(documents: list[Document]) -> str:
    """One query's passage texts as a JSON array."""
    return json.dumps([doc.content or "" for doc in documents], ensure_ascii=False, separators=(",", ":"))


def ultrarag_route(app: FastAPI, search: UltraRAGSearch) -> None:
    """Add ``POST /search``."""

    async def search_route(request: UltraRAGSearchRequest) -> Response:
        check_search_request(request, search.collections)
        hits = await search.search(request.query_list, request.top_k, request.query_instruction)
        return Response(await off_loop(answer_json, hits), media_type="application/json")

    responses: dict[int | str, dict[str, Any]] = {
        404: {"description": "unknown collection_name"},
        413: {"description": f"body or a query too large, over {MAX_QUERIES:,} queries or {MAX_PASSAGES:,} passages"},
        422: {"description": "bad input"},
    }
    app.add_api_route(
        "/search",
        search_route,
        methods=["POST"],
        name="ultrarag_search",
        operation_id="ultrarag_search",
        response_model=UltraRAGSearchResponse,
        tags=["ultrarag"],
        summary=f"UltraRAG deploy search over {search.name}",
        responses=responses,
    )
