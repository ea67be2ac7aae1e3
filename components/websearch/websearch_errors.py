"""How a failed web search is described, and which failures a retry may fix.

Each provider reports trouble its own way: exa-py raises ``ValueError("Request failed with status code N:
body")``, tavily-python raises a class per status that drops the status (432 and 433 both become
``ForbiddenError``), ZhipuAI answers ``{"error": {"code", "message"}}``. The provider modules turn those into one
``Failure`` (HTTP status or None, the provider's own message, retryable or not); the search loop retries or
raises a ``WebSearchError`` that names provider, status, message and query.

Retried: timeouts (``timeout`` is a deadline for the whole request, see ``components.http_limits``), lost
connections, 408, 429 and 5xx. Never retried: 400, 401 (bad key), 402/403, 422, Tavily's 432 (plan limit) and 433
(pay-as-you-go limit), which no amount of waiting fixes, and answers that cannot be used (a redirect, larger than the
limit, undecodable, not JSON, nested too deeply, another shape than documented: ``shape_problem``), which the same
server would send again.
"""

import json
from dataclasses import dataclass
from typing import Any

RETRIED_STATUSES = frozenset({408, 429})
MAX_MESSAGE_CHARS = 500


class WebSearchError(RuntimeError):
    """A web search failed for good (after retries, or at once when a retry cannot help).

    :ivar provider: ``"exa"``, ``"tavily"`` or ``"zhipuai"``.
    :ivar status: The HTTP status the provider answered (200 for an answer we cannot read), or None (timeout,
        connection lost).
    :ivar query: The query that failed.
    """

    def __init__(self, message: str, *, provider: str, status: int | None, query: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.query = query


class ProviderHTTPError(Exception):
    """Raised inside a provider module for an HTTP error answer (or a 200 answer we cannot read)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Failure:
    """One failed attempt: the HTTP status (None without an answer), the provider's words, and whether to retry."""

    status: int | None
    message: str
    retryable: bool

    def describe(self) -> str:
        """``HTTP 429: <message>`` or just the message when there was no answer."""
        return self.message if self.status is None else f"HTTP {self.status}: {self.message}"


def http_failure(status: int, body: str) -> Failure:
    """The failure for an HTTP error answer; retryable for 408, 429 and 5xx."""
    retryable = status in RETRIED_STATUSES or status >= 500
    return Failure(status, provider_message(body), retryable)


def timeout_failure(timeout: float) -> Failure:
    """The failure for a request that got no answer within ``timeout`` seconds (retryable)."""
    return Failure(None, f"no answer within the timeout of {timeout:g} s", True)


def connection_failure(exc: BaseException) -> Failure:
    """The failure for a request that could not reach the provider (retryable)."""
    return Failure(None, f"could not connect: {type(exc).__name__}: {str(exc)[:MAX_MESSAGE_CHARS]}", True)


def provider_message(body: str) -> str:
    """The provider's own words in an error body.

    Reads Exa's ``{"error": "...", "tag"}``, Tavily's ``{"detail": {"error": "..."}}``, ZhipuAI's ``{"error":
    {"code", "message"}}`` and FastAPI's ``{"detail": "..."}``; anything else is quoted as sent, cut short.
    """
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read: quote it as sent
        return body.strip()[:MAX_MESSAGE_CHARS] or "(empty body)"
    if isinstance(data, dict):
        for key in ("error", "detail", "message"):
            said = _said(data.get(key))
            if said:
                tag = data.get("tag") or data.get("code")
                return f"{said} ({tag})"[:MAX_MESSAGE_CHARS] if isinstance(tag, str) else said[:MAX_MESSAGE_CHARS]
    return body.strip()[:MAX_MESSAGE_CHARS]


def _said(value: Any) -> str:
    """A message from a string or from a nested ``{"message"|"error": ..., "code"?}`` object."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = value.get("message") or value.get("error")
        if isinstance(text, str):
            code = value.get("code")
            return f"{text} (code {code})" if code else text
    return ""


def shape_problem(answer: Any, key: str, required: bool = True) -> str:
    """What keeps ``answer`` from being ``{key: [object, ...]}`` (a provider's 2xx answer), or "" if nothing.

    :param required: False if the answer may leave out ``key`` (no hits).
    """
    if not isinstance(answer, dict):
        return f"expected an object with a {key!r} list, got {type(answer).__name__} {str(answer)[:100]}"
    if key not in answer:
        return f"no {key!r} list in {str(answer)[:100]}" if required else ""
    results = answer[key]
    if not isinstance(results, list):
        return f"{key!r} is {str(results)[:100]}, not a list"
    for index, item in enumerate(results):
        if not isinstance(item, dict):
            return f"{key}[{index}] is {str(item)[:100]}, not an object"
    return ""
