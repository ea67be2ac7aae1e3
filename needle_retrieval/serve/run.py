"""One search request through a served pipeline, shared by the REST routes, the MCP tools of `needle serve` and the
Hayhooks wrappers: fed and run by the one engine of every entry point (``needle_retrieval.pipelines.runner``).

Bad input becomes a 4xx ``HTTPException`` with the component's own message; anything else a 500 whose detail
says only that the log has the details (the traceback goes to the log, never into the answer, unless
``NEEDLE_DEBUG`` is set, which adds the one-line cause).

Pipelines run off the event loop, in a pool of ``SEARCH_THREADS`` threads (``SearchRunner.run``, so no part of a
search runs on the loop); more searches wait their turn there.
A batch of 10,000 queries thus keeps one thread busy while ``/status`` and other clients are answered at once.
One request holds at most ``MAX_QUERIES`` queries and asks for at most ``MAX_PASSAGES`` passages (queries x
``top_k``); past either it is a 413 (``check_batch_size``).
"""

import asyncio
import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from fastapi import HTTPException
from hayhooks.server.logger import log
from haystack.errors import FilterError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from components.checks import MAX_PASSAGES, MAX_QUERIES, MAX_QUERY_CHARS, MAX_TOP_K, check_query
from needle_retrieval.pipelines.runner import Outputs, SearchRunner
from needle_retrieval.serve.pipelines import one_line, root_cause

INTERNAL_ERROR = "internal error while answering the query; the server log has the details"
CLIENT_ERRORS = (ValueError, FilterError)  # what components raise for bad input
SEARCH_THREADS = 4  # pipelines running at once; the stores' own locks and the CPU count bound more than this would
T = TypeVar("T")
# Threads start on first use; a thread that finished its search waits for the next one (idle threads cost nothing).
SEARCH_POOL = ThreadPoolExecutor(SEARCH_THREADS, thread_name_prefix="needle-search")


class SearchRequest(BaseModel):
    """One query; unknown fields and loose types are refused rather than ignored or coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(description=f"the query: 1 to {MAX_QUERY_CHARS:,} characters, not all blank")
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K, description="hits to return (default: the index's)")


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


async def run_search(
    name: str, runner: SearchRunner, query: str | list[str], top_k: int | None, instruction: str | None = None
) -> Outputs:
    """Run the pipeline of RUNNER on one query (or a batch pipeline on a list) in the search pool, fed by
    ``SearchPlan.feed`` (``instruction``: None keeps the index's); errors as above."""
    try:
        return await off_loop(runner.run, query, top_k, instruction)
    except Exception as error:
        raise pipeline_error(name, error) from error


async def off_loop(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``work(*args, **kwargs)`` in the search pool, awaited without holding the event loop."""
    return await asyncio.get_running_loop().run_in_executor(SEARCH_POOL, functools.partial(work, *args, **kwargs))
