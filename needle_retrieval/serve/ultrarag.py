"""UltraRAG's deploy protocol on `needle serve`: ``POST /search`` as the seed's ``retriever_deploy_search`` calls it.

``{"query_list": [...], "top_k": 5, "query_instruction": "", "collection_name": ""}`` ->
``{"ret_psg": [[passage, ...], ...]}``: one list of passage texts per query, best first, in query order, each of
``top_k`` passages whenever the index holds that many documents, as UltraRAG's (a list the search left short, such as
BM25's for a query of stopwords, is filled with the corpus's first documents: ``needle_retrieval.serve.corpus_head``).
The
queries run in the batch pipeline of the index's dense part, as UltraRAG's ``retriever_search`` is dense (its BM25
part when it has no dense one), or of the mode ``needle serve --ultrarag-mode`` names (``ServedPipelines``'
``ultrarag_mode``: ``hybrid`` keeps the fused search one setting away); built and probed at start-up like the other
pipelines, fed and run as every entry point is (``needle_retrieval.pipelines.feed``,
``needle_retrieval.pipelines.runner``). The MCP tool ``retriever_search`` runs the very same search.

The body is taken as UltraRAG's deploy server takes it (a plain pydantic model under FastAPI, so pydantic's lax
mode): unknown fields are ignored, and ``top_k`` may be a JSON number with no fraction, ``true`` (1), or a string
pydantic reads as a whole number (``"5"``, ``" +05 "``, ``"1_000"``, ``"5.0"``); the OpenAPI schema says exactly
that (``TOP_K_PATTERN``). Our limits stay: ``top_k`` from 1 to ``MAX_TOP_K``, queries not blank and at most 1 MiB
characters, one request holds at most ``MAX_QUERIES`` (10,000) queries and asks for at most ``MAX_PASSAGES``
(1,000,000) passages, queries x ``top_k``; past either it is a 413 naming the limit. The search and the JSON of its
answer are made in the search pool (``needle_retrieval.serve.run``), never on the event loop.

``query_instruction`` is what the query embedder puts in front of each query, as UltraRAG prefixes queries for
instruction-tuned embedders (e.g. ``"Represent this sentence for searching relevant passages: "``): it replaces the
instruction the index recorded (``needle index --config`` with a ``query_instruction``), never adds to it, and
``""`` (UltraRAG's default, which its clients send when their file names none) keeps the recorded one: UltraRAG's
field cannot be left out, so ``""`` is its "not given" (``needle_retrieval.pipelines.feed.ultrarag_instruction``).
It is for the dense part only: BM25 and the hybrid's query-length weighting see each query as sent.

``collection_name`` is ignored, whatever it says, when the index's dense part is FAISS or the index is BM25 only,
as UltraRAG's FAISS backend ignores it (its shipped examples send ``wiki``). On a Milvus index it names the
collection as UltraRAG's Milvus backend has it: ``""``, the index directory's name, its collection or the alias over
a server's generations; another name is a 404, since UltraRAG would search another collection and this server holds
one.

``tenant`` (needle's, not UltraRAG's; optional) keeps the search, and the documents that fill a short list, to that
tenant's documents, as on ``POST /<mode>_search/run`` (``needle_retrieval.serve.run.request_filters``). A server
started with `needle serve --tenant T` searches T's documents only here and in the ``retriever_*`` MCP tools, and
refuses a request naming another tenant.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import Response
from haystack import Document
from pydantic import BaseModel, Field, WithJsonSchema

from components.checks import MAX_PASSAGES, MAX_QUERIES, MAX_QUERY_CHARS, MAX_TOP_K, check_unicode
from components.deploy_protocol import Passages, passages_json
from needle_retrieval.defaults import DEFAULT_TOP_K, INSTRUCTION_HELP
from needle_retrieval.errors import NeedleError, one_line
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.pipelines.feed import ultrarag_instruction
from needle_retrieval.pipelines.runner import SearchRunner
from needle_retrieval.search.inputs import tenant_filters
from needle_retrieval.search.opening import SearchKnobs, open_search
from needle_retrieval.serve.answers import BODY_ERRORS, QUERY_SCHEMA, error_responses
from needle_retrieval.serve.corpus_head import CorpusHead
from needle_retrieval.serve.pipelines import ServedPipelines, root_cause
from needle_retrieval.serve.run import (
    TENANT_FIELD_HELP,
    Filters,
    check_batch_size,
    check_request_query,
    lane,
    off_loop,
    request_filters,
    search_batch,
    tenant_body,
)

GENERATION_SUFFIX = re.compile(r"_gen\d{6}$")  # a server collection's generation: NAME_genNNNNNN behind alias NAME
# The white space pydantic strips around a number in a string (Unicode's White_Space, which Rust's trim uses).
PYDANTIC_SPACE = r"[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
# The strings pydantic's lax int reads as 1..MAX_TOP_K (10,000): an optional +, leading zeros, single underscores
# between digits, and a fraction of zeros only, inside white space. A test holds it to pydantic's own parse.
TOP_K_PATTERN = rf"^{PYDANTIC_SPACE}*\+?(?:0_?)*(?:[1-9](?:_?[0-9]){{0,3}}|1(?:_?0){{4}})(?:\.0+)?{PYDANTIC_SPACE}*$"
TOP_K_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K},
        {"type": "string", "pattern": TOP_K_PATTERN},
        {"type": "boolean", "enum": [True]},
    ]
}
MAX_TENANT_HEADS = 64  # the corpus heads of requests' tenants kept at once (the oldest goes first)
# top_k as UltraRAG's FastAPI model takes it (pydantic's lax int: "5", 5.0 and true are whole numbers), in our range.
LaxTopK = Annotated[int, Field(ge=1, le=MAX_TOP_K), WithJsonSchema(TOP_K_SCHEMA, mode="validation")]


class UltraRAGSearchRequest(BaseModel):
    """UltraRAG's deploy-search body, read as its own server reads it: pydantic's lax mode, unknown fields ignored."""

    query_list: list[str] = Field(
        min_length=1,
        description=f"the queries, at most {MAX_QUERIES:,} (and {MAX_PASSAGES:,} passages, queries x top_k) per "
        "request, each 1 to 1 MiB characters, not blank",
        json_schema_extra={"maxItems": MAX_QUERIES, "items": {"type": "string", **QUERY_SCHEMA}},
    )
    top_k: LaxTopK = Field(
        default=DEFAULT_TOP_K,
        description=f"passages per query, 1 to {MAX_TOP_K:,}: a whole number, or a string or true that pydantic "
        "reads as one (as UltraRAG's server takes it)",
    )
    query_instruction: str = Field(default="", max_length=MAX_QUERY_CHARS, description=INSTRUCTION_HELP)
    collection_name: str = Field(
        default="",
        description="ignored on a FAISS or BM25-only index (as UltraRAG's FAISS backend ignores it); on Milvus, "
        '"", this index\'s name, its collection or alias',
    )
    tenant: str | None = Field(default=None, description=TENANT_FIELD_HELP)


@dataclass(frozen=True)
class UltraRAGSearch:
    """The batch pipeline ``/search`` runs (its runner), the ``collection_name`` values it answers to (None: any) and
    the corpus head that fills its short lists."""

    name: str
    runner: SearchRunner
    collections: frozenset[str] | None
    head: CorpusHead
    tenant_heads: dict[str, CorpusHead] = field(default_factory=dict)  # by a request's tenant filter

    async def search(
        self, queries: list[str], top_k: int, instruction: str, filters: Filters | None = None
    ) -> list[list[Document]]:
        """Top-k documents per query, in query order, ``QUERY_BATCH`` queries per run (``search_batch``: a heavy batch
        takes turns with the other requests), a short list filled from the corpus head. INSTRUCTION is UltraRAG's
        field, read by ``ultrarag_instruction``: ``""`` (its default) keeps the index's. FILTERS: a request's tenant
        (``request_filters``), whose documents alone are searched and fill the lists."""
        hits = await search_batch(self.name, self.runner, queries, top_k, ultrarag_instruction(instruction), filters)
        head = self.head if filters is None else self.head_of(filters)
        if head.short(hits, top_k):
            hits = await off_loop(lane(len(hits)), head.fill, hits, top_k)
        return hits

    def head_of(self, filters: Filters) -> CorpusHead:
        """The corpus head of the tenant FILTERS keep, kept for the next requests (at most ``MAX_TENANT_HEADS``)."""
        key = json.dumps(filters, sort_keys=True)
        if key not in self.tenant_heads:
            if len(self.tenant_heads) >= MAX_TENANT_HEADS:
                del self.tenant_heads[next(iter(self.tenant_heads))]
            self.tenant_heads[key] = CorpusHead(self.head.store, self.head.documents, scope=filters)
        return self.tenant_heads[key]


def collection_names(served: ServedPipelines) -> frozenset[str] | None:
    """What ``collection_name`` may say: anything (None) unless the index has a dense part on Milvus, whose backend
    in UltraRAG searches the collection named; there nothing, the index directory's name, its collection and alias."""
    manifest = served.manifest
    if manifest.store != "milvus" or "dense" not in manifest.modes:
        return None
    names = {"", served.index_dir.resolve().name}
    if manifest.collection:
        names |= {manifest.collection, GENERATION_SUFFIX.sub("", manifest.collection)}
    return frozenset(names)


def dense_first(manifest: IndexManifest) -> str:
    """The mode UltraRAG's ``retriever_search`` has on this index: dense when it has a dense part (UltraRAG's is a
    dense search), else its BM25 part."""
    return "dense" if "dense" in manifest.modes else manifest.modes[0]


def deploy_ultrarag(served: ServedPipelines, mode: str | None = None) -> UltraRAGSearch:
    """Build, warm up and probe MODE's batch pipeline on the served stores; None: the mode the server was given
    (``served.ultrarag_mode``, ``needle serve --ultrarag-mode``), else the dense part (``dense_first``)."""
    manifest = served.manifest
    mode = mode or served.ultrarag_mode or dense_first(manifest)
    name = f"{mode}_batch_search"
    try:
        knobs = SearchKnobs(served.fusion, served.trust, tenant=served.tenant)
        opened = open_search(
            served.index_dir, mode, knobs=knobs, manifest=manifest, stores=served.stores, wrap_errors=True
        )
    except Exception as error:
        cause = one_line(root_cause(error))
        where = f"pipeline {name} (UltraRAG /search)"
        raise NeedleError(f"{where} failed to deploy from {served.index_dir}: {cause}") from error
    runner = opened.runner
    scope = None if served.tenant is None else tenant_filters(manifest, served.tenant, served.index_dir)
    return UltraRAGSearch(name, runner, collection_names(served), CorpusHead.of(runner, manifest.documents, scope))


def check_search_request(request: UltraRAGSearchRequest, collections: frozenset[str] | None) -> None:
    """413 past the batch limits, 413/422 for a bad query or instruction (naming its position), 404 for a collection
    not in COLLECTIONS (None: every name is taken, and ignored)."""
    check_batch_size(len(request.query_list), request.top_k)
    for i, query in enumerate(request.query_list):
        check_request_query(query, f"query_list[{i}]")
    try:
        check_unicode(request.query_instruction, "query_instruction")
    except ValueError as error:
        raise HTTPException(422, one_line(error)) from error
    if collections is not None and request.collection_name not in collections:
        known = ", ".join(repr(name) for name in sorted(collections))
        raise HTTPException(404, f"collection_name {request.collection_name!r} is not served here; use one of {known}")


def answer_json(hits: list[list[Document]]) -> bytes:
    """``{"ret_psg": [[passage, ...], ...]}`` of HITS (``components.deploy_protocol.passages_json``), made in the
    search pool."""
    return passages_json([[doc.content or "" for doc in docs] for docs in hits])


def ultrarag_route(app: FastAPI, search: UltraRAGSearch, served: ServedPipelines) -> None:
    """Add ``POST /search`` over SERVED's index (its tenant, if the server has one)."""

    async def search_route(request: UltraRAGSearchRequest) -> Response:
        check_search_request(request, search.collections)
        filters = request_filters(request.tenant, served.manifest, served.index_dir, served.tenant)
        hits = await search.search(request.query_list, request.top_k, request.query_instruction, filters)
        return Response(await off_loop(lane(len(hits)), answer_json, hits), media_type="application/json")

    search_route.__annotations__["request"] = tenant_body(UltraRAGSearchRequest, served.takes_tenant)

    responses = error_responses(
        {
            **BODY_ERRORS,
            403: "the request names a tenant this server does not answer for",
            404: "collection_name is not this Milvus index's",
            413: f"the body or a query is too large, or over {MAX_QUERIES:,} queries or {MAX_PASSAGES:,} passages",
        }
    )
    app.add_api_route(
        "/search",
        search_route,
        methods=["POST"],
        name="ultrarag_search",
        operation_id="ultrarag_search",
        response_model=Passages,
        tags=["ultrarag"],
        summary=f"UltraRAG deploy search over {search.name}",
        responses=responses,
    )
