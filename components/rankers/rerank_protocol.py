"""The two HTTP rerank protocols the TEI client speaks, and strict checks of what servers send back.

- TEI ``POST .../rerank``: ``{"query", "texts", "truncate"}`` -> ``[{"index", "score"}, ...]`` (sorted by score);
  errors are ``{"error", "error_type"}`` with 400/413/422/424/429/503.
- Cohere/Infinity ``POST .../v1/rerank``: ``{"query", "documents", "model"?}`` ->
  ``{"results": [{"index", "relevance_score"}, ...]}``; errors are FastAPI's ``{"detail": ...}`` or
  ``{"error": {"message"}}``.

mxRAG returned an empty array when a server misbehaved; every check here raises instead, naming the problem.
"""

import json
import math
from enum import Enum
from typing import Any
from urllib.parse import urlsplit

import httpx

MAX_URL_CHARS = 2048
MAX_ERROR_CHARS = 500


class RerankShape(Enum):
    """Which protocol a URL speaks, told by how its path ends."""

    TEI = "tei"
    COHERE = "cohere"


class RerankServerError(RuntimeError):
    """A rerank server failed or answered something we cannot trust; carries the HTTP status when there is one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def shape_of(url: Any) -> RerankShape:
    """
    Check a rerank URL and tell its protocol: a path ending ``/v1/rerank`` is Cohere-shaped, ``/rerank`` is TEI.

    :raises ValueError: if the URL is not http(s) with a host, or its path ends otherwise.
    """
    if not isinstance(url, str) or not 1 <= len(url) <= MAX_URL_CHARS:
        raise ValueError(f"url must be a string of 1..{MAX_URL_CHARS} characters, got {url!r}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"url must start with http:// or https:// and name a host, got {url!r}")
    path = parts.path.rstrip("/")
    if path.endswith("/v1/rerank"):
        return RerankShape.COHERE
    if path.endswith("/rerank"):
        return RerankShape.TEI
    raise ValueError(f"url path must end with /rerank (TEI) or /v1/rerank (Cohere/Infinity), got {url!r}")


def request_body(shape: RerankShape, query: str, texts: list[str], truncate: bool, model: str | None) -> dict[str, Any]:
    """The JSON body of one rerank request."""
    if shape is RerankShape.TEI:
        return {"query": query, "texts": texts, "truncate": truncate}
    body: dict[str, Any] = {"query": query, "documents": texts, "return_documents": False}
    if model:
        body["model"] = model
    return body


def error_text(response: httpx.Response) -> str:
    """The server's own error message: TEI's ``error`` (+ ``error_type``), FastAPI's ``detail``, or raw text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:MAX_ERROR_CHARS] or response.reason_phrase
    if isinstance(body, dict) and "error" in body:
        error = body["error"]
        if isinstance(error, dict):
            error = error.get("message", error)
        kind = f" ({body['error_type']})" if "error_type" in body else ""
        return f"{error}{kind}"[:MAX_ERROR_CHARS]
    if isinstance(body, dict) and "detail" in body:
        return json.dumps(body["detail"])[:MAX_ERROR_CHARS]
    return json.dumps(body)[:MAX_ERROR_CHARS]


def _entries(shape: RerankShape, body: Any) -> tuple[list[Any], str]:
    """The list of ranked entries and the name of their score field, or an error saying what was wrong."""
    if shape is RerankShape.TEI:
        if not isinstance(body, list):
            raise ValueError(f"expected a JSON array of {{index, score}}, got {type(body).__name__}")
        return body, "score"
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        raise ValueError('expected a JSON object with a "results" array')
    return body["results"], "relevance_score"


def parse_scores(shape: RerankShape, body: Any, n_texts: int) -> list[float]:
    """
    Scores in input order from a rerank response, after checking every entry.

    Each index must be an integer in range, appear once, and all ``n_texts`` must be present; each score must be
    a finite number.

    :raises ValueError: describing the first problem found.
    """
    entries, score_key = _entries(shape, body)
    if len(entries) != n_texts:
        raise ValueError(f"sent {n_texts} texts but got {len(entries)} results")
    by_index: dict[int, float] = {}
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"result {position} is not an object: {entry!r}")
        index, score = entry.get("index"), entry.get(score_key)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n_texts:
            raise ValueError(f"result {position} has index {index!r}, expected an integer in [0, {n_texts - 1}]")
        if index in by_index:
            raise ValueError(f"index {index} appears more than once")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise ValueError(f"result {position} (index {index}) has {score_key} {score!r}, expected a finite number")
        by_index[index] = float(score)
    return [by_index[i] for i in range(n_texts)]  # every index is there: n entries, n distinct indexes in range
