"""What the OpenAPI schema of `needle serve` says beyond the request models: the query rules the server's own checks
enforce, and the error answers of every route, so that the schema accepts exactly what the server accepts and names
every status it answers (a fuzzer such as schemathesis then finds nothing, with valid or invalid requests).

The query rules are declared in the schema only (``json_schema_extra``), not enforced by pydantic: the routes'
checks (``check_request_query``) keep their own statuses and messages (413 for a query over the size limit, 422
naming the query that is blank).
"""

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from components.checks import MAX_QUERY_CHARS, MAX_TOP_K

# One character that is not white space as Python's str.isspace has it (what check_query strips): a query with one
# is not blank. Spelled out rather than "\S", whose white space differs between Python and JSON Schema's ECMA-262.
NOT_BLANK = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
QUERY_SCHEMA: dict[str, Any] = {"minLength": 1, "maxLength": MAX_QUERY_CHARS, "pattern": NOT_BLANK}


def integral(value: Any) -> Any:
    """A JSON number with no fraction (``5.0``, ``1e3``) as the int it is: JSON Schema's ``integer`` takes it, so the
    server does too; anything else is left for the model's strict check (``2.5``, ``"5"`` and ``true`` are refused)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# top_k of a strict model: a whole number from 1 to MAX_TOP_K, written with a fraction or not.
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K), BeforeValidator(integral)]


class ValidationProblem(BaseModel):
    """One way a body does not fit its schema: pydantic's type, where (``["body", "query"]``) and why."""

    type: str
    loc: list[str | int]
    msg: str


class ErrorAnswer(BaseModel):
    """Every refusal and failure outside ``/rerank``: one message, or one entry per problem for a body that does
    not fit the request schema (422)."""

    detail: str | list[ValidationProblem]


BODY_ERRORS = {
    400: "the body is not UTF-8, or nests too deep",
    413: "the body or a query is too large, or the request asks for too much",
    422: "the body does not fit the schema, or a query is blank or holds a lone surrogate",
}


def error_responses(statuses: dict[int, str]) -> dict[int | str, dict[str, Any]]:
    """FastAPI's ``responses`` for STATUSES (status -> when), each answered as an ``ErrorAnswer``."""
    return {status: {"model": ErrorAnswer, "description": when} for status, when in statuses.items()}
