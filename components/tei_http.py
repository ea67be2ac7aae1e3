"""The retry loop of the TEI HTTP clients: the TEI ranker (``components.rankers.tei_ranker``) and the TEI sparse
embedders (``components.embedders.tei_sparse_common``).

Both POST one JSON body and retry the same failures: 429 and 503 answers and connection errors, after ``backoff``
seconds doubled at each attempt, at most ``max_retries`` times, all inside one ``CallDeadline`` of ``timeout``
seconds (a wait that would pass it is not made). An answer the client refuses to read (``UnusableAnswer``: too
large, a redirect, undecodable) and any other status end the call at once. One loop for both, so a fix to it
reaches both; what differs stays with each client: its exception and its words (``Wording``), and whether a
server's ``Retry-After`` is honoured and a TLS failure is final (``Retries``).
"""

import asyncio
import contextlib
import ssl
from dataclasses import dataclass
from typing import Protocol, TypeVar

import httpx

from components.http_limits import CallDeadline, UnusableAnswer
from components.rankers.rerank_protocol import error_text

RETRY_STATUSES = (429, 503)
MAX_RETRY_AFTER_S = 60.0
E = TypeVar("E", bound=Exception)


@dataclass(frozen=True)
class Retries:
    """How one call retries: ``timeout`` seconds for all attempts and waits, ``max_retries`` extra attempts, the
    first after ``backoff`` seconds, doubled each time.

    ``retry_after``: a 429/503's ``Retry-After`` (seconds, at most ``MAX_RETRY_AFTER_S``) lengthens the wait.
    ``tls_final``: a TLS failure (a bad certificate, a refused client certificate, also as a bare ``ssl.SSLError``
    while reading) is not retried, as no retry can fix it.
    """

    timeout: float
    max_retries: int
    backoff: float
    retry_after: bool = False
    tls_final: bool = False

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        """The wait before the attempt after ATTEMPT (0-based): back-off, or the server's ``Retry-After`` if longer."""
        delay = self.backoff * 2.0**attempt
        if response is not None and self.retry_after:
            with contextlib.suppress(ValueError):  # an HTTP-date Retry-After: keep our own back-off
                delay = max(delay, min(float(response.headers.get("retry-after", 0)), MAX_RETRY_AFTER_S))
        return delay


class Wording(Protocol[E]):
    """How one client words each failure: every method returns the exception the call raises."""

    def unusable(self, exc: UnusableAnswer) -> E:
        """An answer the client refuses to read (not retried)."""
        ...

    def unreachable(self, exc: Exception, attempt: int) -> E:
        """A connection error at ATTEMPT (0-based)."""
        ...

    def refused(self, response: httpx.Response, attempt: int) -> E:
        """An answer other than 200 at ATTEMPT (0-based)."""
        ...

    def out_of_time(self, error: E, why: str) -> E:
        """ERROR, the last failure, when waiting for another attempt would pass the timeout (WHY says so)."""
        ...


async def post_with_retries(
    client: httpx.AsyncClient, url: str, payload: object, retries: Retries, words: Wording[E]
) -> httpx.Response:
    """POST PAYLOAD as JSON to URL until an answer is 200, and return it; raise the failure (in WORDS) that ends
    the retries."""
    # TLS 1.3 reports a refused client certificate after the handshake, as an alert that httpx may surface as a
    # bare ssl.SSLError while reading the answer.
    unreachable = (httpx.TransportError, ssl.SSLError) if retries.tls_final else (httpx.TransportError,)
    with CallDeadline(retries.timeout) as deadline:
        attempt = 0
        while True:
            try:
                response = await client.post(url, json=payload)
            except UnusableAnswer as exc:  # the same server would send the same again: not retried
                raise words.unusable(exc) from None
            except unreachable as exc:
                error = words.unreachable(exc, attempt)
                if attempt == retries.max_retries or (retries.tls_final and is_tls_failure(exc)):
                    raise error from exc
                delay = retries.delay(attempt)
            else:
                if response.status_code == 200:
                    return response
                error = words.refused(response, attempt)
                if response.status_code not in RETRY_STATUSES or attempt == retries.max_retries:
                    raise error
                delay = retries.delay(attempt, response)
            if not deadline.allows_wait(delay):
                raise words.out_of_time(error, deadline.too_late(delay))
            await asyncio.sleep(delay)
            attempt += 1


def refusal(url: str, response: httpx.Response, n_texts: int, attempt: int) -> str:
    """``<url> answered HTTP <status> to a request of N texts (attempt K): <the server's message>``."""
    return (
        f"{url} answered HTTP {response.status_code} to a request of {n_texts} texts "
        f"(attempt {attempt + 1}): {server_message(response)}"
    )


def server_message(response: httpx.Response) -> str:
    """The server's error message (``rerank_protocol.error_text``), also for an error body nested too deeply."""
    try:
        return error_text(response)
    except RecursionError:
        return "(an error body nested too deeply to read)"


def is_tls_failure(exc: BaseException) -> bool:
    """True if a transport error comes from TLS (bad certificate etc.): retrying cannot fix it."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
