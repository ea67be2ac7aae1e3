"""Bounds on every outbound HTTP call: a total deadline, a cap on the answer's size, no redirects, a safe JSON read.

httpx's ``timeout`` is per operation (connect, each read, each write): a server that sends one byte a second never
trips a 3 s read timeout, and a non-streamed answer is read whole, however long it is. ``LimitedAsyncClient`` is an
``httpx.AsyncClient`` that adds these bounds to every request it sends, also the requests of the SDKs it is handed to
(tavily-python's ``AsyncTavilyClient``, exa-py's ``AsyncExa``, openai's ``AsyncOpenAI``):

* a deadline from sending the request to the last byte of its answer (``deadline_s``, measured on the event loop's
  clock). Past it the request fails with ``httpx.ReadTimeout``, the timeout error httpx raises itself, so each SDK
  reports it as its own timeout and every retry rule that already handles timeouts applies unchanged;
* at most ``max_bytes`` of answer body, counted after decompression (the client asks for ``identity``; a server
  that compresses anyway has gzip/deflate decoded here, under the same limit, and any other coding refused). A
  longer answer fails with ``ResponseTooLarge`` once the limit is passed, or before any byte of the body is read
  when its ``Content-Length`` says so;
* no redirect: a 3xx answer fails with ``AnswerRedirected`` (a server we were pointed at must not send our key and
  our queries elsewhere), and an answer whose coding cannot be decoded (another coding, or corrupt gzip) with
  ``AnswerUndecodable``.

``CallDeadline`` bounds a call with all its retries: inside ``with CallDeadline(timeout):`` no request ends later
than ``timeout`` seconds after the call began, and ``allows_wait`` tells the caller's retry loop whether a back-off
(or the server's ``Retry-After``) still fits. It is a context variable, so it reaches the requests an SDK sends.

The limits are installed by a response event hook that runs before any other hook and before httpx reads the body,
so they hold for proxies and for hooks that read the body themselves. ``decode_json`` reads a body without
letting ``RecursionError`` (deep nesting) or ``UnicodeDecodeError`` out: each is a ``NotJSON`` (a ``ValueError``).
``run_blocking`` runs such a call from synchronous code: sync twins run the async implementation on a private
event loop, so they get the same deadline (a blocking socket read cannot be interrupted at a deadline).
``watch_answers`` lets a caller learn which HTTP statuses its requests were answered with, to tell a request that
failed from an answer that could not be read.
"""

import asyncio
import contextlib
import json
import zlib
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar, Token
from typing import Any, TypeVar

import httpx

R = TypeVar("R")
DEADLINE_KEY = "needle.deadline"  # request extension: the event-loop time by which the answer must be complete
DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_ANSWERED: ContextVar[list[int] | None] = ContextVar("needle_answered", default=None)
_CALL_END: ContextVar[float | None] = ContextVar("needle_call_end", default=None)


class UnusableAnswer(Exception):
    """An answer this client refuses to read: too large, a redirect, or undecodable. Never worth a retry.

    Not an ``httpx`` exception on purpose: SDKs retry or relabel those as connection failures, while the same
    server would answer the same way again.
    """

    def __init__(self, message: str, url: str, status: int, reason: str) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.reason = reason  # the message without URL and status, for callers that name those themselves


class ResponseTooLarge(UnusableAnswer):
    """An answer longer than the caller's limit; no more than the limit (plus one read) was taken from the socket."""

    def __init__(self, url: str, status: int, limit: int, declared: int | None = None) -> None:
        size = f"declares {declared:,} bytes" if declared is not None else "is longer"
        reason = f"the answer is longer than the limit of {limit:,} bytes"
        super().__init__(
            f"the answer of {url} (HTTP {status}) {size}; the limit is {limit:,} bytes", url, status, reason
        )
        self.limit = limit


class AnswerRedirected(UnusableAnswer):
    """A 3xx answer: not followed, so the key and the request never go where the server points."""

    def __init__(self, response: httpx.Response) -> None:
        url, status = str(response.request.url), response.status_code
        target = response.headers.get("location")
        where = f"redirect to {response.request.url.join(target)}" if target else "a redirect without a Location"
        super().__init__(
            f"{url} answered HTTP {status} ({where} is not followed)", url, status, f"{where} is not followed"
        )


class AnswerUndecodable(UnusableAnswer):
    """An answer whose ``Content-Encoding`` this client cannot decode: one it did not ask for, or corrupt data."""

    def __init__(self, url: str, status: int, why: str) -> None:
        message = f"could not decode the answer of {url} (HTTP {status}): {why}"
        super().__init__(message, url, status, f"could not decode the answer: {why}")


class CallDeadline:
    """The time of one call: ``seconds`` bound every attempt and every wait between attempts together.

    Enter it on the event loop that sends the requests (``with CallDeadline(timeout) as deadline:``); every request
    a ``LimitedAsyncClient`` sends in that context (tasks started inside it included) ends by the call's end.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = asyncio.get_running_loop().time() + seconds
        self._token: Token[float | None] | None = None

    def __enter__(self) -> "CallDeadline":
        self._token = _CALL_END.set(self.end)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _CALL_END.reset(self._token)

    def left(self) -> float:
        """Seconds until the call's end (0 once it has passed)."""
        return max(0.0, self.end - asyncio.get_running_loop().time())

    def allows_wait(self, delay: float) -> bool:
        """True if waiting ``delay`` seconds still leaves time for another attempt before the call's end."""
        return delay < self.left()

    def too_late(self, delay: float) -> str:
        """How to say that a wait of ``delay`` seconds does not fit (appended to the last failure)."""
        return f"no retry: waiting {delay:g} s more would pass the timeout of {self.seconds:g} s"


class NotJSON(ValueError):
    """A body that is not JSON (or not text, or nested too deeply for Python to read)."""


def decode_json(body: bytes | str) -> Any:
    """The JSON value of ``body``; a ``NotJSON`` for anything else, deep nesting included.

    Its message completes "the answer is ...": ``not JSON: '<html>...'`` (the start, as text) or ``JSON nested too
    deeply to read``.
    """
    try:
        return json.loads(body)
    except RecursionError:
        raise NotJSON("JSON nested too deeply to read") from None
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        start = body[:200].decode("utf-8", "replace") if isinstance(body, bytes) else body[:200]
        raise NotJSON(f"not JSON: {start!r}") from None


@contextlib.contextmanager
def watch_answers() -> Iterator[list[int]]:
    """Collect the HTTP status of every answer a ``LimitedAsyncClient`` receives in this context (redirects too)."""
    statuses: list[int] = []
    token = _ANSWERED.set(statuses)
    try:
        yield statuses
    finally:
        _ANSWERED.reset(token)


def _deadline_error(request: httpx.Request) -> httpx.ReadTimeout:
    limit = request.extensions.get(DEADLINE_KEY, (None, 0.0))[1]
    return httpx.ReadTimeout(f"no complete answer within the deadline of {limit:g} s", request=request)


class LimitedBody(httpx.AsyncByteStream):
    """An answer body read under the request's deadline and size limit, decoded here if the server compressed it."""

    def __init__(
        self, inner: httpx.AsyncByteStream, response: httpx.Response, max_bytes: int, decoder: Any | None
    ) -> None:
        self.inner = inner
        self.request = response.request
        self.status = response.status_code
        self.max_bytes = max_bytes
        self.decoder = decoder  # a zlib decompressobj, or None for an identity body
        self.deadline: float = response.request.extensions[DEADLINE_KEY][0]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        chunks = aiter(self.inner)
        while True:
            try:
                async with asyncio.timeout_at(self.deadline):
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise _deadline_error(self.request) from None
            if self.decoder is not None:  # at most one byte past the limit is ever inflated
                chunk = self._inflate(chunk, self.max_bytes - received + 1)
            received += len(chunk)
            if received > self.max_bytes:
                raise ResponseTooLarge(str(self.request.url), self.status, self.max_bytes)
            yield chunk
        tail = self._inflate(None, 0) if self.decoder is not None else b""
        if received + len(tail) > self.max_bytes:
            raise ResponseTooLarge(str(self.request.url), self.status, self.max_bytes)
        if tail:
            yield tail

    def _inflate(self, chunk: bytes | None, limit: int) -> bytes:
        """The next decoded bytes (at most ``limit``), or the decoder's tail when ``chunk`` is None."""
        decoder = self.decoder
        assert decoder is not None  # called for compressed answers only
        try:
            data: bytes = decoder.flush() if chunk is None else decoder.decompress(chunk, limit)
        except zlib.error as exc:
            raise AnswerUndecodable(
                str(self.request.url), self.status, f"its compressed data is corrupt ({exc})"
            ) from None
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()


class LimitedAsyncClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` whose every request has a total deadline and a size limit on its answer.

    :param deadline_s: Seconds from sending a request to the last byte of its answer; also httpx's own per-operation
        ``timeout`` unless one is given.
    :param max_bytes: The most bytes of (decoded) answer body taken for one request.
    :param kwargs: Any other ``httpx.AsyncClient`` option (``base_url``, ``headers``, ``event_hooks``, ...).
    """

    def __init__(self, *, deadline_s: float, max_bytes: int, **kwargs: Any) -> None:
        hooks = dict(kwargs.pop("event_hooks", None) or {})
        hooks["response"] = [self._limit, *hooks.get("response", [])]
        kwargs.setdefault("timeout", deadline_s)
        headers = httpx.Headers(kwargs.pop("headers", None))
        headers.setdefault("Accept-Encoding", "identity")
        super().__init__(event_hooks=hooks, headers=headers, **kwargs)
        self.deadline_s = deadline_s
        self.max_bytes = max_bytes

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        """Send under the deadline (headers and, unless streamed, the whole body); past it, ``httpx.ReadTimeout``.

        The deadline is ``deadline_s`` from now, or the end of the ``CallDeadline`` around it if that comes first.
        Redirects are never followed, whatever the caller (an SDK) asks.
        """
        deadline = asyncio.get_running_loop().time() + self.deadline_s
        call_end = _CALL_END.get()
        if call_end is not None:
            deadline = min(deadline, call_end)
        kwargs["follow_redirects"] = False
        request.extensions[DEADLINE_KEY] = (deadline, self.deadline_s)
        try:
            async with asyncio.timeout_at(deadline):
                return await super().send(request, **kwargs)
        except TimeoutError:
            raise _deadline_error(request) from None

    async def _limit(self, response: httpx.Response) -> None:
        """Response hook, first of all: note the status, refuse a redirect, a declared oversize body or a coding we
        cannot decode, and wrap the rest."""
        answered = _ANSWERED.get()
        if answered is not None:
            answered.append(response.status_code)
        url = str(response.request.url)
        if 300 <= response.status_code < 400:
            await response.aclose()
            raise AnswerRedirected(response)
        declared = response.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > self.max_bytes:
            await response.aclose()
            raise ResponseTooLarge(url, response.status_code, self.max_bytes, int(declared))
        coding = response.headers.get("content-encoding", "identity").strip().lower()
        if coding not in ("", "identity") and coding not in DECODERS:
            await response.aclose()
            raise AnswerUndecodable(url, response.status_code, f"Content-Encoding {coding!r} was not asked for")
        decoder = zlib.decompressobj(DECODERS[coding]) if coding in DECODERS else None
        if decoder is not None:
            del response.headers["content-encoding"]  # decoded here, under the limit; httpx must not decode again
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = LimitedBody(response.stream, response, self.max_bytes, decoder)


def run_blocking(coroutine: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine to completion from sync code, also when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
