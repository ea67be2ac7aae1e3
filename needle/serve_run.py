"""One search request through a served pipeline, shared by the REST routes and the MCP tools of `needle serve`.

Bad input becomes a 4xx ``HTTPException`` with the component's own message; anything else a 500 whose detail
says only that the log has the details (the traceback goes to the log, never into the answer, unless
``NEEDLE_DEBUG`` is set, which adds the one-line cause).
"""

import os
from typing import Any

from fastapi import HTTPException
from hayhooks.server.logger import log
from haystack import Pipeline
from haystack.errors import FilterError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from components.checks import MAX_QUERY_CHARS, MAX_TOP_K, check_query
from needle.serve_pipelines import SearchPlan, one_line, root_cause

INTERNAL_ERROR = "internal error while answering the query; the server log has the details"
CLIENT_ERRORS = (ValueError, FilterError)  # what components raise for bad input


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


def check_request_query(query: str, name: str = "query") -> None:
    """413 for a query over the size limit, 422 for an empty, blank or invalid-Unicode one."""
    if len(query) > MAX_QUERY_CHARS:
        raise HTTPException(413, f"{name} is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}")
    try:
        check_query(query, name)
    except ValueError as error:
        raise HTTPException(422, one_line(error)) from error


async def run_search(
    name: str,
    pipeline: Pipeline,
    plan: SearchPlan,
    query: str | list[str],
    top_k: int | None,
    instruction: str = "",
) -> dict[str, Any]:
    """Run ``pipeline`` on one query (or a batch pipeline on a list) through run_async; errors as above."""
    try:
        data = plan.feed(query, top_k, instruction)
        result: dict[str, Any] = await pipeline.run_async(data=data, include_outputs_from={plan.answering})
    except Exception as error:
        raise pipeline_error(name, error) from error
    return result
