"""One search request through a served pipeline, shared by the REST routes, the MCP tools of `needle serve` and the
Hayhooks wrappers: fed and run by the one engine of every entry point (``needle_retrieval.pipelines.runner``).

Bad input becomes a 4xx ``HTTPException`` with the component's own message; anything else a 500 whose detail
says only that the log has the details (the traceback goes to the log, never into the answer, unless
``NEEDLE_DEBUG`` is set, which adds the one-line cause).

Pipelines run off the event loop (``SearchRunner.run``, so no part of a search runs on the loop), in two pools of
threads, so that a heavy batch cannot keep a one-query request waiting: a request of at most ``QUICK_QUERIES``
queries runs in a lane of its own (``QUICK_POOL``), any larger one in ``SEARCH_POOL``, ``QUERY_BATCH`` queries per
pipeline run as `needle search --queries` runs them (``search_batch``), each run a job of the pool that waits its
turn behind the jobs queued before it. Four clients sending 500-query batches kept a one-query request waiting 12 s
for a thread of a single pool; now it waits for a thread of its own lane, and a batch request for at most one run of
each other batch (``benchmarks/bench_fair_serve.py``). ``/status`` and other routes are answered at once meanwhile.
A request may name a ``tenant`` (``request_filters``): its search then answers from that tenant's documents only,
the filter `needle search --tenant` uses given to every retriever for that run; a server started with `needle serve
--tenant T` is T's alone (its pipelines filter on T) and refuses a request naming another tenant with a 403.
One request holds at most ``MAX_QUERIES`` queries and asks for at most ``MAX_PASSAGES`` passages (queries x
``top_k``); past either it is a 413 (``check_batch_size``).
"""

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

from fastapi import HTTPException
from hayhooks.server.logger import log
from haystack import Document
from haystack.errors import FilterError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, create_model

from components.checks import MAX_PASSAGES, MAX_QUERIES, MAX_QUERY_CHARS, check_query, check_unicode
from components.stores.tenant_fields import MAX_TENANT, tenant_value_problem
from needle_retrieval.defaults import QUERY_BATCH
from needle_retrieval.errors import NeedleError, one_line
from needle_retrieval.pipelines.feed import INSTRUCTION_FIELD_HELP
from needle_retrieval.pipelines.runner import Outputs, SearchRunner
from needle_retrieval.search.inputs import tenant_filters
from needle_retrieval.serve.answers import NOT_BLANK, QUERY_SCHEMA, TopK
from needle_retrieval.serve.pipelines import root_cause

if TYPE_CHECKING:
    from needle_retrieval.index.manifest import IndexManifest

INTERNAL_ERROR = "internal error while answering the query; the server log has the details"
CLIENT_ERRORS = (ValueError, FilterError)  # what components raise for bad input
SEARCH_THREADS = 4  # batch runs at once; the stores' own locks and the CPU count bound more than this would
QUICK_THREADS = 2  # requests of a handful of queries at once, beside the batches
QUICK_QUERIES = 8  # a request of at most this many queries runs in the quick lane
TENANT_FIELD_HELP = (
    "search only this tenant's documents, on an index built with `needle index --tenant-field` (default: every "
    "document; on a server started with --tenant T: T's, and only T may be named)"
)
# A tenant `needle search --tenant` takes, as JSON Schema (search semantics, so no `$`): not starting like a date
# (``looks_like_date``, its ASCII digits), no control character, one that is not blank; or null, for every document.
TENANT_PATTERN = rf"^(?![0-9]{{4}}-[\s\S]{{2}}-[\s\S]{{2}})(?![\s\S]*[\x00-\x1f\x7f])(?=[\s\S]*{NOT_BLANK})"
TENANT_SCHEMA = {
    "anyOf": [{"type": "string", "minLength": 1, "maxLength": MAX_TENANT, "pattern": TENANT_PATTERN}, {"type": "null"}]
}
Filters = dict[str, Any]
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
# Threads start on first use; a thread that finished its search waits for the next one (idle threads cost nothing).
SEARCH_POOL = ThreadPoolExecutor(SEARCH_THREADS, thread_name_prefix="needle-search")
QUICK_POOL = ThreadPoolExecutor(QUICK_THREADS, thread_name_prefix="needle-quick")


class SearchRequest(BaseModel):
    """One query; unknown fields and loose types are refused rather than ignored or coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(
        description=f"the query: 1 to {MAX_QUERY_CHARS:,} characters, not all blank", json_schema_extra=QUERY_SCHEMA
    )
    top_k: TopK | None = Field(default=None, description="hits to return (default: the index's)")
    query_instruction: str | None = Field(default=None, description=INSTRUCTION_FIELD_HELP)
    tenant: str | None = Field(default=None, description=TENANT_FIELD_HELP)


def tenant_body(model: type[M], takes_tenant: bool) -> type[M]:
    """MODEL with the schema of its ``tenant`` saying what a server takes: a tenant or null (TAKES_TENANT: it serves
    one, or the index records a tenant field), else null only (a tenant named there is a 422 saying how to build an
    index that takes one)."""
    schema = {**(TENANT_SCHEMA if takes_tenant else {"type": "null"}), "description": TENANT_FIELD_HELP}
    tenant = Annotated[str | None, WithJsonSchema(schema)]
    return create_model(model.__name__, __base__=model, tenant=(tenant, None))


def validation_message(error: ValidationError) -> str:
    """A pydantic error as one line: ``location: message`` per problem, without the (possibly huge) input."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in error.errors())


def pipeline_error(name: str, error: Exception) -> HTTPException:
    """422 with the component's message for bad input (an HTTPException passes through); otherwise a generic 500."""
    if isinstance(error, HTTPException):
        return error
    cause = root_cause(error)
    if isinstance(cause, CLIENT_ERRORS):
        return HTTPException(422, one_line(cause))
    log.opt(exception=error).error("pipeline {} failed: {}", name, one_line(cause))
    detail = f"{INTERNAL_ERROR}: {one_line(cause)}" if os.environ.get("NEEDLE_DEBUG") else INTERNAL_ERROR
    return HTTPException(500, detail)


def check_batch_size(count: int, top_k: int, name: str = "query_list") -> None:
    """413 for more than MAX_QUERIES queries in one request, or more than MAX_PASSAGES passages asked for."""
    if count > MAX_QUERIES:
        raise HTTPException(413, f"{name} has {count:,} queries; the limit is {MAX_QUERIES:,} per request")
    if count * top_k > MAX_PASSAGES:
        raise HTTPException(
            413,
            f"{count:,} queries x top_k {top_k:,} ask for {count * top_k:,} passages; the limit is {MAX_PASSAGES:,} "
            "per request (send fewer queries or a smaller top_k)",
        )


def check_request_query(query: str, name: str = "query") -> None:
    """413 for a query over the size limit, 422 for an empty, blank or invalid-Unicode one."""
    if len(query) > MAX_QUERY_CHARS:
        raise HTTPException(413, f"{name} is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}")
    try:
        check_query(query, name)
    except ValueError as error:
        raise HTTPException(422, one_line(error)) from error


def check_request_instruction(instruction: str | None, name: str = "query_instruction") -> None:
    """413 for an instruction over the query size limit, 422 for one that is not valid Unicode; None and ``""`` pass
    (the index's instruction, and none: ``needle_retrieval.pipelines.feed``)."""
    if instruction is None:
        return
    if len(instruction) > MAX_QUERY_CHARS:
        raise HTTPException(413, f"{name} is {len(instruction):,} characters; the limit is {MAX_QUERY_CHARS:,}")
    try:
        check_unicode(instruction, name)
    except ValueError as error:
        raise HTTPException(422, one_line(error)) from error


def request_filters(
    tenant: str | None, manifest: "IndexManifest", index_dir: Path, pinned: str | None = None
) -> Filters | None:
    """The run-time filters of a request naming TENANT on the index of MANIFEST at INDEX_DIR, served for PINNED
    (`needle serve --tenant`; None: every tenant); None when the pipelines' own filters answer (no tenant, or PINNED).

    :raises HTTPException: 422 for a value `needle search --tenant` refuses, or an index that records no tenant
        field (saying how to build one that does); 403 for a tenant other than PINNED.
    """
    if tenant is None:
        return None
    problem = tenant_value_problem(tenant)
    if problem is not None:
        raise HTTPException(422, f"tenant: {problem}")
    try:
        check_unicode(tenant, "tenant")
    except ValueError as error:
        raise HTTPException(422, one_line(error)) from error
    if pinned is not None:
        if tenant != pinned:
            raise HTTPException(403, f"tenant {tenant!r:.80} is not served here: this server answers for one tenant")
        return None  # every pipeline of the server filters on it already
    try:
        return tenant_filters(manifest, tenant, index_dir, "tenant")
    except NeedleError as error:
        raise HTTPException(422, one_line(error)) from error


def lane(count: int) -> ThreadPoolExecutor:
    """The pool a request of COUNT queries runs in: the quick lane for a handful, else the batch pool."""
    return QUICK_POOL if count <= QUICK_QUERIES else SEARCH_POOL


async def run_search(
    name: str,
    runner: SearchRunner,
    query: str,
    top_k: int | None,
    instruction: str | None = None,
    filters: Filters | None = None,
) -> Outputs:
    """Run the pipeline of RUNNER on one query in the quick lane, fed by ``SearchPlan.feed`` (``instruction``: None
    keeps the index's; ``filters``: a request's tenant, ``request_filters``); errors as above."""
    return await guarded(name, off_loop(lane(1), runner.run, query, top_k, instruction, filters))


async def search_batch(
    name: str,
    runner: SearchRunner,
    queries: list[str],
    top_k: int,
    instruction: str | None = None,
    filters: Filters | None = None,
) -> list[list[Document]]:
    """Top-k documents per query, in query order, from RUNNER's batch pipeline: ``QUERY_BATCH`` queries per run, as
    `needle search --queries` runs them, each run a job of its own in the lane's pool, queued behind the jobs of
    other requests that were waiting (so a batch of 10,000 takes turns with the others, run by run)."""
    pool = lane(len(queries))
    hits: list[list[Document]] = []
    for start in range(0, len(queries), QUERY_BATCH):
        chunk = queries[start : start + QUERY_BATCH]
        found = await guarded(name, off_loop(pool, runner.documents, chunk, top_k, instruction, filters))
        hits += cast(list[list[Document]], found)  # a batch pipeline's documents: one list per query
    return hits


async def guarded(name: str, search: Awaitable[T]) -> T:
    """SEARCH's result; its errors as ``pipeline_error`` maps them (a 4xx for bad input, else a 500)."""
    try:
        return await search
    except Exception as error:
        raise pipeline_error(name, error) from error


async def off_loop(pool: ThreadPoolExecutor, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in POOL, awaited without holding the event loop."""
    return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(work, *args))
