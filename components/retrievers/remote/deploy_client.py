"""The client side of UltraRAG's deploy protocol, shared by the single and batch remote retrievers.

``POST {retriever_url}/search`` with ``{"query_list", "top_k", "query_instruction", "collection_name"}`` ->
``{"ret_psg": [[passage, ...], ...]}`` (the seed's ``retriever_deploy_search``; ``needle serve`` answers it).
Connection errors, timeouts and 5xx answers are retried with exponential back-off; anything else, and the last
failure, raises ``RemoteSearchError`` with the server's status and body. Every answer is checked: one list of
strings per query.

Each request has a deadline from sending it to the last byte of its answer, retries and the waits between them
included (``timeout``; a server that trickles bytes cannot stretch it), an answer may hold at most
``MAX_ANSWER_BYTES`` and a redirect is not followed (``components.http_limits``). A batch
of more than ``MAX_QUERIES`` queries (the most ``needle serve`` takes in one request) goes out in consecutive
requests of at most that many, so the server's cap is never what fails it.

The protocol's answers carry passages without scores, so these retrievers take ``score_threshold`` (as every
retriever here does, init and run) only to refuse any value but None, saying why (``no_threshold``): applying none
while one was asked for would hand weak hits on silently.
"""

import asyncio
from typing import Any, Self

import httpx
from haystack import Document, default_from_dict, default_to_dict

from components.checks import (
    MAX_QUERIES,
    check_int,
    check_number,
    check_queries,
    check_query,
    check_top_k,
    shown,
)
from components.deploy_protocol import read_passages
from components.http_limits import (
    CallDeadline,
    LimitedAsyncClient,
    NotJSON,
    UnusableAnswer,
    decode_json,
    run_blocking,
)

MAX_BODY_CHARS = 500
RETRY_STATUSES = range(500, 600)
MAX_ANSWER_BYTES = 128 * 1024 * 1024  # one answer: 10,000 queries x 5 passages of 2 KB stay far below
NOT_FORMAT = "the answer is not the UltraRAG deploy format"


class RemoteSearchError(RuntimeError):
    """The search server failed or answered something unreadable; ``status`` is its HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def search_url(retriever_url: str) -> str:
    """The seed's normalisation: ``http://`` added when no scheme is given, ``/search`` appended unless present."""
    if not isinstance(retriever_url, str) or not retriever_url.strip():
        raise ValueError(f"retriever_url must be a non-empty string such as 127.0.0.1:64501, got {retriever_url!r}")
    url = retriever_url.strip()
    if not url.startswith(("http://", "https://")):
        url = f"http://{url}"
    url = url.rstrip("/")
    return url if url.endswith("/search") else f"{url}/search"


def no_threshold(score_threshold: Any) -> None:
    """Refuse a minimum score: the deploy protocol's answers have no scores to compare it with."""
    if score_threshold is not None:
        raise ValueError(
            f"score_threshold must be None for a remote retriever, got {shown(score_threshold)}: UltraRAG's deploy "
            "protocol (POST /search) answers passages without scores, so there is nothing to compare it with; set "
            "it on the server's own search, or on a ranker after this retriever"
        )


def as_documents(passages: list[str], url: str) -> list[Document]:
    """One Document per passage, best first; ``meta`` says where it came from and its rank (1-based)."""
    return [Document(content=text, meta={"rank": rank, "url": url}) for rank, text in enumerate(passages, 1)]


class DeploySearchClient:
    """Settings and the request loop; the components add their sockets on top."""

    def __init__(
        self,
        retriever_url: str,
        top_k: int = 5,
        query_instruction: str = "",
        collection_name: str = "",
        timeout: float = 30.0,
        retries: int = 3,
        base_delay: float = 1.0,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param retriever_url: the server, e.g. ``127.0.0.1:64501`` (``http://`` is added when missing).
        :param top_k: passages per query, 1..10000.
        :param query_instruction: sent along; the server puts it in front of each query for its dense part.
        :param collection_name: sent along; ``""`` means the server's own index.
        :param timeout: seconds for each request with its retries and the waits between them, from sending
            it to the last byte of the answer (a deadline, not per read), (0, 3600].
        :param retries: attempts after the first on connection errors, timeouts and 5xx answers, 0..10.
        :param base_delay: seconds before the first retry, doubling after each, [0, 60].
        :param score_threshold: None only: the protocol's answers carry no scores (``no_threshold``).
        :raises ValueError: if a parameter is out of range; the message names it.
        """
        no_threshold(score_threshold)
        self.score_threshold = score_threshold
        self.url = search_url(retriever_url)
        self.retriever_url = retriever_url
        self.top_k = check_top_k(top_k)
        if not isinstance(query_instruction, str) or not isinstance(collection_name, str):
            raise ValueError("query_instruction and collection_name must be strings")
        self.query_instruction = query_instruction
        self.collection_name = collection_name
        self.timeout = check_number("timeout", timeout, 0, 3600, low_open=True)
        self.retries = check_int("retries", retries, 0, 10)
        self.base_delay = check_number("base_delay", base_delay, 0, 60)

    _init_parameters = (
        "retriever_url",
        "top_k",
        "query_instruction",
        "collection_name",
        "timeout",
        "retries",
        "base_delay",
        "score_threshold",
    )

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, **{name: getattr(self, name) for name in self._init_parameters})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return default_from_dict(cls, data)

    async def search_async(self, queries: list[str], top_k: int | None) -> list[list[Document]]:
        """Documents per query, in query order: one request per ``MAX_QUERIES`` queries (retried as described)."""
        k = self.top_k if top_k is None else check_top_k(top_k)
        found: list[list[Document]] = []
        async with LimitedAsyncClient(deadline_s=self.timeout, max_bytes=MAX_ANSWER_BYTES) as client:
            for start in range(0, len(queries), MAX_QUERIES):
                found.extend(await self._search_part(client, queries[start : start + MAX_QUERIES], k))
        return found

    async def _search_part(self, client: httpx.AsyncClient, queries: list[str], top_k: int) -> list[list[Document]]:
        """One request's worth of queries."""
        payload = {
            "query_list": queries,
            "top_k": top_k,
            "query_instruction": self.query_instruction,
            "collection_name": self.collection_name,
        }
        body = await self._post(client, payload)
        try:
            lists = read_passages(body, len(queries), MAX_BODY_CHARS)
        except (ValueError, RecursionError) as error:
            raise RemoteSearchError(f"{self.url} answered HTTP 200, but {NOT_FORMAT}: {error}", 200) from None
        return [as_documents(passages, self.url) for passages in lists]

    async def _post(self, client: httpx.AsyncClient, payload: dict[str, Any]) -> Any:
        """POST until a 2xx, a non-retryable answer, the retries run out, or the next wait would pass ``timeout``."""
        failure, status, made = "", None, 0
        with CallDeadline(self.timeout) as deadline:
            for attempt in range(self.retries + 1):
                delay = self.base_delay * 2 ** (attempt - 1)
                if attempt and not deadline.allows_wait(delay):
                    failure += f"; {deadline.too_late(delay)}"
                    break
                if attempt:
                    await asyncio.sleep(delay)
                made += 1
                try:
                    response = await client.post(self.url, json=payload)
                except httpx.TransportError as error:  # connection refused or reset, timeouts, the deadline
                    failure, status = f"{type(error).__name__}: {error}", None
                    continue
                except UnusableAnswer as error:  # too large, a redirect, undecodable: the same again, not retried
                    raise RemoteSearchError(f"search at {self.url} failed: {error}", error.status) from None
                if response.is_success:
                    return self._json(response)
                failure, status = f"HTTP {response.status_code}: {response.text[:MAX_BODY_CHARS]}", response.status_code
                if response.status_code not in RETRY_STATUSES:
                    break
        tries = f"after {made} attempt{'s' if made > 1 else ''}"
        raise RemoteSearchError(f"search at {self.url} failed {tries}: {failure}", status)

    def _json(self, response: httpx.Response) -> Any:
        """The JSON of a 2xx answer; anything else is ``RemoteSearchError`` quoting what came."""
        try:
            return decode_json(response.content)
        except NotJSON as error:
            message = f"{self.url} answered HTTP {response.status_code}, but {NOT_FORMAT}: {error}"
            raise RemoteSearchError(message, response.status_code) from None

    def search(self, queries: list[str], top_k: int | None) -> list[list[Document]]:
        """The sync twin of ``search_async`` (also safe inside a running event loop)."""
        return run_blocking(self.search_async(queries, top_k))


def checked_query(query: str) -> list[str]:
    """One query as the one-item list the protocol sends."""
    return [check_query(query)]


def checked_queries(queries: list[str]) -> list[str]:
    """The queries, each checked (the server would refuse them with a 4xx anyway)."""
    return check_queries(queries)
