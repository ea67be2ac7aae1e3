"""UltraRAG's deploy protocol on `needle serve`: ``POST /search`` as the seed's ``retriever_deploy_search`` calls it.

``{"query_list": [...], "top_k": 5, "query_instruction": "", "collection_name": ""}`` ->
``{"ret_psg": [[passage, ...], ...]}``: one list of passage texts per query, best first, in query order. The
queries run in the batch pipeline of the index's best mode (hybrid when it has dense and BM25 parts, else its
mode), built and probed at start-up like the other pipelines, fed and run as every entry point is
(``needle_retrieval.pipelines.feed``, ``needle_retrieval.pipelines.runner``).

One request holds at most ``MAX_QUERIES`` (10,000) queries and asks for at most ``MAX_PASSAGES`` (1,000,000)
passages, queries x ``top_k``; past either it is a 413 naming the limit. The search and the JSON of its answer are
made in the search pool (``needle_retrieval.serve.run``), never on the event loop.

``query_instruction`` is what the query embedder puts in front of each query, as UltraRAG prefixes queries for
instruction-tuned embedders (e.g. ``"Represent this sentence for searching relevant passages: "``): it replaces the
instruction the index recorded (``needle index --config`` with a ``query_instruction``), never adds to it, and
``""`` (UltraRAG's default, which its clients always send) keeps the recorded one. It is for the dense part only:
BM25 and the hybrid's query-length weighting see each query as sent. ``collection_name`` may be ``""``, the
index directory's name or, on Milvus, its collection (or the alias over a server's generations); anything else
is a 404, since this server holds one index.
"""

import json
import re
from dataclasses import dataclass

from fastapi import FastAPI, HTTPException
from fastapi.responses import Response
from haystack import Document
from pydantic import BaseModel, ConfigDict, Field

from components.checks import MAX_PASSAGES, MAX_QUERIES, MAX_QUERY_CHARS, check_unicode
from needle_retrieval.defaults import DEFAULT_TOP_K
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.templates import fill_search_pipeline
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.feed import SearchPlan
from needle_retrieval.pipelines.runner import SearchRunner
from needle_retrieval.search.searcher import best_mode
from needle_retrieval.serve.answers import BODY_ERRORS, QUERY_SCHEMA, TopK, error_responses
from needle_retrieval.serve.pipelines import ServedPipelines, one_line, probed_runner, root_cause
from needle_retrieval.serve.run import check_batch_size, check_request_query, lane, off_loop, search_batch

INSTRUCTION_HELP = 'put in front of each query for the dense part only, replacing the index\'s own ("" keeps it)'
GENERATION_SUFFIX = re.compile(r"_gen\d{6}$")  # a server collection's generation: NAME_genNNNNNN behind alias NAME


class UltraRAGSearchRequest(BaseModel):
    """UltraRAG's deploy-search body; unknown fields and loose types are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query_list: list[str] = Field(
        min_length=1,
        description=f"the queries, at most {MAX_QUERIES:,} (and {MAX_PASSAGES:,} passages, queries x top_k) per "
        "request, each 1 to 1 MiB characters, not blank",
        json_schema_extra={"maxItems": MAX_QUERIES, "items": {"type": "string", **QUERY_SCHEMA}},
    )
    top_k: TopK = Field(default=DEFAULT_TOP_K, description="passages per query")
    query_instruction: str = Field(default="", max_length=MAX_QUERY_CHARS, description=INSTRUCTION_HELP)
    collection_name: str = Field(default="", description='"" or this index\'s name (or its Milvus collection)')


class UltraRAGSearchResponse(BaseModel):
    """One list of passage texts per query, best first, in query order."""

    ret_psg: list[list[str]]


@dataclass(frozen=True)
class UltraRAGSearch:
    """The batch pipeline ``/search`` runs (its runner) and the names it answers to."""

    name: str
    runner: SearchRunner
    collections: frozenset[str]

    async def search(self, queries: list[str], top_k: int, instruction: str) -> list[list[Document]]:
        """Top-k documents per query, in query order, ``QUERY_BATCH`` queries per run (``search_batch``: a heavy batch
        takes turns with the other requests); an empty INSTRUCTION keeps the index's."""
        return await search_batch(self.name, self.runner, queries, top_k, instruction or None)


def collection_names(served: ServedPipelines) -> frozenset[str]:
    """What ``collection_name`` may say: nothing, the index directory's name, its Milvus collection and alias."""
    names = {"", served.index_dir.resolve().name}
    if served.manifest.collection:
        names |= {served.manifest.collection, GENERATION_SUFFIX.sub("", served.manifest.collection)}
    return frozenset(names)


def deploy_ultrarag(served: ServedPipelines, mode: str | None = None) -> UltraRAGSearch:
    """Build, warm up and probe MODE's batch pipeline (default: the index's best mode) on the served stores."""
    manifest = served.manifest
    mode = mode or best_mode(manifest)
    name = f"{mode}_batch_search"
    try:
        template = manifest.template(mode, batch=True)
        data = fill_search_pipeline(served.index_dir, manifest, template, served.fusion, served.trust)
        runner = probed_runner(pf.build(data), SearchPlan.of(data, "queries"), served.stores)
    except Exception as error:
        cause = one_line(root_cause(error))
        where = f"pipeline {name} (UltraRAG /search)"
        raise NeedleError(f"{where} failed to deploy from {served.index_dir}: {cause}") from error
    return UltraRAGSearch(name, runner, collection_names(served))


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
        return Response(await off_loop(lane(len(hits)), answer_json, hits), media_type="application/json")

    responses = error_responses(
        {
            **BODY_ERRORS,
            404: "collection_name is not this index's",
            413: f"the body or a query is too large, or over {MAX_QUERIES:,} queries or {MAX_PASSAGES:,} passages",
        }
    )
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
