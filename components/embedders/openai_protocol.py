"""What an OpenAI-compatible ``/embeddings`` server may answer, and the strict reading of it.

OpenAI documents the exchange as ``POST {base_url}/embeddings`` with ``{"model", "input": [...],
"encoding_format": "float", "dimensions"?}``, answered by ``{"data": [{"index", "embedding"}], "model",
"usage"}``, and errors as ``{"error": {"message", "type", "param", "code"}}``. Servers that copy the API
(Infinity, vLLM, TEI, Ollama, ...) do not always copy it exactly, so every answer is checked here: one finite
vector per input, each index once, all of one width. Haystack's embedders trust the body (a short answer
either fails inside ``zip`` or silently leaves documents without embeddings); here it is an error that says
what came back.

The retry rules live here too: which failures a retry can fix (timeouts, lost connections, 408/409/429 and
5xx, as OpenAI's own SDK decides) and how long to wait (exponential back-off, or the server's
``Retry-After`` when it asks for longer).
"""

import contextlib
import json
import math
from typing import Any

import httpx2
import numpy as np
import numpy.typing as npt
import openai

from components.http_limits import NotJSON, ResponseTooLarge, UnusableAnswer, decode_json

RETRY_STATUSES = frozenset({408, 409, 429})
MAX_RETRY_AFTER_S = 60.0
MAX_ERROR_CHARS = 500
NOT_FORMAT = "answer is not the OpenAI embeddings format"
Matrix = npt.NDArray[np.float64]


class OpenAIEmbeddingError(RuntimeError):
    """An embedding server failed or answered something we cannot trust; carries the HTTP status if there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def is_retryable(exc: openai.OpenAIError) -> bool:
    """True for failures a later attempt may not meet: timeouts, lost connections, 408/409/429 and 5xx."""
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is one too
        return True
    return isinstance(exc, openai.APIStatusError) and (exc.status_code in RETRY_STATUSES or exc.status_code >= 500)


def retry_delay(exc: openai.OpenAIError, attempt: int, backoff: float) -> float:
    """Seconds to wait before retry number ``attempt + 1``: ``backoff * 2**attempt``, or longer if the server asks.

    ``Retry-After`` (seconds) and OpenAI's ``retry-after-ms`` are honoured up to MAX_RETRY_AFTER_S; an HTTP-date
    ``Retry-After`` is ignored in favour of our own back-off.
    """
    delay = backoff * 2.0**attempt
    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
            with contextlib.suppress(ValueError):
                asked = float(headers.get(name, "")) * scale
                if math.isfinite(asked):
                    return max(delay, min(asked, MAX_RETRY_AFTER_S))
    return delay


def server_message(response: httpx2.Response) -> str:
    """The server's words: OpenAI's ``error.message`` (with type and code), TEI's ``error``, FastAPI's ``detail``.

    Read from the response itself, so a body in any of these shapes (or plain text) is quoted as sent.
    """
    text = response.text
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read: quoted as sent
        return text[:MAX_ERROR_CHARS] or response.reason_phrase
    error = body.get("error", body.get("detail")) if isinstance(body, dict) else None
    if isinstance(error, dict):
        kinds = [str(error[key]) for key in ("type", "code") if error.get(key)]
        suffix = f" ({', '.join(kinds)})" if kinds else ""
        return f"{error.get('message', '')}{suffix}"[:MAX_ERROR_CHARS]
    if isinstance(error, str):
        kind = f" ({body['error_type']})" if isinstance(body, dict) and "error_type" in body else ""
        return f"{error}{kind}"[:MAX_ERROR_CHARS]
    return text[:MAX_ERROR_CHARS]


def failure(exc: openai.OpenAIError, url: str, count: int, attempts: int, key_missing: bool) -> OpenAIEmbeddingError:
    """The error to raise once ``exc`` ends a request of ``count`` texts after ``attempts`` attempts."""
    tries = f"{attempts} attempt(s)"
    if isinstance(exc, openai.APITimeoutError):
        return OpenAIEmbeddingError(f"{url} did not answer a request of {count} text(s) in time ({tries})")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return OpenAIEmbeddingError(f"could not reach {url} ({tries}): {type(cause).__name__}: {cause}")
    if not isinstance(exc, openai.APIStatusError):
        return OpenAIEmbeddingError(f"request to {url} failed: {type(exc).__name__}: {exc}")
    status, said = exc.status_code, server_message(exc.response)
    if status == 401:
        hint = (
            "no key was set (OPENAI_API_KEY and RETRIEVER_API_KEY are empty)"
            if key_missing
            else "check the key in api_key"
        )
        return OpenAIEmbeddingError(f"{url} refused the API key (HTTP 401, not retried; {hint}): {said}", status)
    retried = "" if is_retryable(exc) else ", not retried"
    return OpenAIEmbeddingError(
        f"{url} answered HTTP {status} to a request of {count} text(s) ({tries}{retried}): {said}", status
    )


def unusable(exc: UnusableAnswer, url: str, count: int) -> OpenAIEmbeddingError:
    """The error for an answer that is not read (not retried: the same server would answer so again): longer than
    the size limit, a redirect, or a coding that cannot be decoded."""
    if not isinstance(exc, ResponseTooLarge):
        return OpenAIEmbeddingError(f"{exc} (a request of {count} text(s), not retried)", exc.status)
    return OpenAIEmbeddingError(
        f"{url} answered a request of {count} text(s) with more than {exc.limit:,} bytes (HTTP {exc.status}, "
        "not retried; the limit is 1 MiB plus 128 KiB per text)",
        exc.status,
    )


def parse_embeddings(content: bytes, count: int, dimensions: int | None, url: str) -> tuple[Matrix, dict[str, Any]]:
    """Read a 200 answer into a (count, dim) matrix in input order, plus ``{"model", "usage"}`` when given.

    :raises OpenAIEmbeddingError: The body is not JSON (or nested too deeply to read), has no ``data`` list,
        an item that is no object with a valid index,
        holds a different number of embeddings than inputs, repeats or misses an index, or has a vector that is
        not all finite numbers of the common (or requested) width.
    """
    where = f"{url} answered HTTP 200 to a request of {count} text(s)"
    try:
        payload = decode_json(content)
    except NotJSON as exc:
        raise OpenAIEmbeddingError(f"{where}, but the {NOT_FORMAT}: {exc}", 200) from None
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise OpenAIEmbeddingError(f"{where}, but the {NOT_FORMAT}: no 'data' list in {content[:200]!r}", 200)
    if len(data) != count:
        raise OpenAIEmbeddingError(f"{where} with {len(data)} embeddings; it must send one per input", 200)
    try:
        matrix = _matrix(_in_input_order(data, where), where)
    except RecursionError:  # an item nested so deeply that describing it overflows the stack
        raise OpenAIEmbeddingError(f"{where} with an embedding nested too deeply to read", 200) from None
    if dimensions is not None and matrix.shape[1] != dimensions:
        raise OpenAIEmbeddingError(f"{where} with {matrix.shape[1]}-dimensional vectors, not {dimensions}", 200)
    return matrix, _meta(payload)


def _in_input_order(data: list[Any], where: str) -> list[Any]:
    """The ``embedding`` fields sorted by ``index`` (a missing index means list position), each index once."""
    vectors: list[Any] = [None] * len(data)
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(data):
            said = f"data[{position}] is no object with a valid index: {item!r:.200}"
            raise OpenAIEmbeddingError(f"{where}, but the {NOT_FORMAT}: {said}", 200)
        if vectors[index] is not None:
            raise OpenAIEmbeddingError(f"{where} but index {index} appears twice", 200)
        vectors[index] = item.get("embedding")
        if not isinstance(vectors[index], list) or not vectors[index]:
            raise OpenAIEmbeddingError(f"{where} but the embedding of input {index} is not a list of numbers", 200)
    return vectors


def _matrix(vectors: list[Any], where: str) -> Matrix:
    """Stack the vectors, refusing ragged widths, non-numbers (strings, booleans, nulls) and NaN or infinity."""
    try:
        raw = np.asarray(vectors)
    except ValueError:
        raise OpenAIEmbeddingError(f"{where} with vectors of different widths", 200) from None
    if raw.ndim != 2 or raw.dtype.kind not in "iuf":
        raise OpenAIEmbeddingError(f"{where} with embeddings that are not all lists of numbers", 200)
    matrix = raw.astype(np.float64, copy=False)
    if not np.isfinite(matrix).all():
        raise OpenAIEmbeddingError(f"{where} with NaN or infinite values in an embedding", 200)
    return matrix


def _meta(payload: dict[str, Any]) -> dict[str, Any]:
    """``model`` and integer ``usage`` counts from an answer, when the server sent them."""
    meta: dict[str, Any] = {}
    if isinstance(payload.get("model"), str):
        meta["model"] = payload["model"]
    usage = payload.get("usage")
    if isinstance(usage, dict):
        meta["usage"] = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    return meta
