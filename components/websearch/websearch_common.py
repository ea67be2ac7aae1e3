"""What every web search component shares: options, clients, retries with back-off, concurrency and Documents.

UltraRAG's ``retriever_websearch`` sends each query under a semaphore of ``retrieve_thread_num``, tries
``retries`` times with a delay that doubles from ``base_delay``, and returns passage strings (an empty list when
every try failed, silently). This base does the same work with Haystack's conventions:

* one query (``_search_async``) or a batch (``_search_batch_async``: at most ``retrieve_thread_num`` queries in
  flight under an ``asyncio.Semaphore``, results in query order). ``run`` is ``run_async`` on a private event loop
  with clients of its own (``components.http_limits.run_blocking``), so both have the same bounds;
* every request goes through a ``LimitedAsyncClient`` (``components.http_limits``): ``timeout`` is a deadline from
  sending a query's first request to the last byte of its last answer, retries and the waits between them
  included, not a per-read timeout; an answer may hold at most ``MAX_ANSWER_BYTES`` and a redirect is not
  followed. The SDKs (exa-py's ``AsyncExa``, tavily-python's ``AsyncTavilyClient``) are handed that client,
  ZhipuAI is one POST on it. A response hook checks every 2xx answer before the SDK reads it: JSON, an object
  holding the provider's list of result objects;
* a failed attempt is retried only when a retry can help (see ``websearch_errors``) and the wait of
  ``base_delay * 2**n`` seconds still fits in ``timeout``; the last failure raises ``WebSearchError`` naming
  provider, HTTP status, the provider's message and the query, or, with ``on_error="empty"``, logs that as a
  warning and returns no Documents for that query. An answer that cannot be used (a redirect, too large,
  undecodable, not JSON, nested too deeply, of another shape than the provider documents) is such a failure too,
  never retried, never a raw SDK exception;
* every hit becomes a new ``Document``: content is the passage text, meta holds ``url``, ``title``,
  ``provider``, ``retrieval_type: "web"`` and ``score`` when the provider gives a number (also ``Document.score``).

A provider module subclasses ``WebSearchBase`` and supplies the client, one search call and the mapping of its
SDK's exceptions; ``SingleQueryRuns`` / ``BatchQueryRuns`` add the ``run`` / ``run_async`` sockets.
"""

import asyncio
import logging
import math
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar

import httpx
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.utils import Secret
from haystack.utils.auth import SecretType

from components.checks import check_base_url, check_int, check_number, check_queries, check_query
from components.http_limits import (
    CallDeadline,
    LimitedAsyncClient,
    NotJSON,
    UnusableAnswer,
    decode_json,
    run_blocking,
    watch_answers,
)
from components.websearch.websearch_errors import (
    MAX_MESSAGE_CHARS,
    Failure,
    ProviderHTTPError,
    WebSearchError,
    http_failure,
    shape_problem,
)

logger = logging.getLogger(__name__)

ON_ERROR_CHOICES = ("raise", "empty")
MAX_RETRIES = 10
MAX_THREADS = 64
MAX_ANSWER_BYTES = 64 * 1024 * 1024  # one answer; 100 hits with whole page texts stay far below
# What reading an answer of the wrong shape raises inside an SDK (a dict expected, a list came; a missing key...).
UNREADABLE_ANSWER = (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError, httpx.DecodingError)
Hit = dict[str, Any]  # {"content": str, "url", "title", "score"?, other meta}
T = TypeVar("T")


@dataclass(frozen=True)
class Clients:
    """The provider's client (what ``_call_async`` is given) and the bounded httpx client it sends through."""

    sdk: Any
    http: LimitedAsyncClient


class WebSearchBase:
    """Options, clients and the retrying search loop of one provider.

    A provider subclass sets ``provider`` and ``max_top_k`` and implements the provider methods below
    (no ``abc.ABC`` here: its metaclass clashes with Haystack's ``ComponentMeta``).
    """

    provider: ClassVar[str]
    label: ClassVar[str]  # the provider's name in messages: "Exa", "Tavily", "ZhipuAI"
    results_key: ClassVar[str]  # the list of result objects in a 2xx answer
    results_required: ClassVar[bool] = True  # False: an answer without the list holds no hits
    max_top_k: ClassVar[int]
    _init_parameters: ClassVar[tuple[str, ...]] = (
        "api_key", "base_url", "top_k", "retries", "base_delay", "timeout", "retrieve_thread_num", "on_error",
        "search_kwargs",
    )  # fmt: skip

    def __init__(
        self,
        *,
        api_key: Secret,
        base_url: str | None,
        top_k: int,
        retries: int,
        base_delay: float,
        timeout: float,
        retrieve_thread_num: int,
        on_error: str,
        search_kwargs: dict[str, Any] | None,
    ) -> None:
        """Check and keep the options every provider shares (documented on each component)."""
        if not isinstance(api_key, Secret):
            raise ValueError("api_key must be a haystack.utils.Secret, e.g. Secret.from_env_var('EXA_API_KEY')")
        self.api_key = api_key
        base = check_base_url(base_url)
        self.base_url = base.rstrip("/") if base else None
        self.top_k = check_int("top_k", top_k, 1, self.max_top_k)
        self.retries = check_int("retries", retries, 0, MAX_RETRIES)
        self.base_delay = check_number("base_delay", base_delay, 0, 60)
        self.timeout = check_number("timeout", timeout, 0, 120, low_open=True)
        self.retrieve_thread_num = check_int("retrieve_thread_num", retrieve_thread_num, 1, MAX_THREADS)
        if on_error not in ON_ERROR_CHOICES:
            raise ValueError(f"on_error must be one of {ON_ERROR_CHOICES}, got {on_error!r}")
        self.on_error = on_error
        if search_kwargs is not None and not isinstance(search_kwargs, dict):
            raise ValueError(f"search_kwargs must be None or a dict of provider options, got {search_kwargs!r}")
        self.search_kwargs = dict(search_kwargs or {})
        self._clients: Clients | None = None
        self._async_loop: weakref.ReferenceType[asyncio.AbstractEventLoop] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component; the API key stays a reference to its environment variable."""
        return default_to_dict(self, **{name: getattr(self, name) for name in self._init_parameters})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild the component from ``to_dict`` output (the key is read from the environment again)."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Check that the API key is set; no request is sent (each ``run`` opens and closes its own clients)."""
        self._key()

    async def warm_up_async(self) -> None:
        """Create the clients on the running event loop (again if the loop changed)."""
        loop = asyncio.get_running_loop()
        if self._clients is None or self._async_loop is None or self._async_loop() is not loop:
            self._clients = self._open()
            self._async_loop = weakref.ref(loop)

    def _open(self) -> Clients:
        """A bounded httpx client (deadline ``timeout``, at most ``MAX_ANSWER_BYTES``) and the provider's over it."""
        key = self._key()
        options = self._http_options(key)
        hooks = dict(options.pop("event_hooks", None) or {})
        hooks["response"] = [*hooks.get("response", []), self._check_answer]
        http = LimitedAsyncClient(deadline_s=self.timeout, max_bytes=MAX_ANSWER_BYTES, event_hooks=hooks, **options)
        return Clients(self._make_async_client(key, http), http)

    async def _check_answer(self, response: httpx.Response) -> None:
        """Response hook: a 2xx answer must be JSON holding the provider's list of result objects, or it is a
        ``ProviderHTTPError`` saying what it is instead (read under the size limit, before any SDK reads it)."""
        if not response.is_success:
            return
        await response.aread()
        try:
            problem = shape_problem(decode_json(response.content), self.results_key, self.results_required)
        except NotJSON as exc:
            problem = str(exc)
        if problem:
            raise ProviderHTTPError(response.status_code, f"{self._not_format()}: {problem}")

    def _not_format(self) -> str:
        """How every message about a 2xx answer of the wrong shape begins."""
        return f"the answer is not the {self.label} format"

    def _blocking(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """``work(client)`` on a private event loop with clients of its own, closed when it is done."""

        async def once() -> T:
            clients = self._open()
            try:
                return await work(clients.sdk)
            finally:
                await clients.http.aclose()

        return run_blocking(once())

    def _key(self) -> str:
        """The resolved API key; a missing one is a ValueError naming the environment variable."""
        key = self.api_key.resolve_value()
        if not key:
            source = self.api_key.to_dict()["env_vars"] if self.api_key.type is SecretType.ENV_VAR else "the token"
            raise ValueError(f"api_key: no {self.provider} API key is set (looked in {source})")
        return str(key)

    def _http_options(self, key: str) -> dict[str, Any]:
        """Extra ``httpx.AsyncClient`` options of the provider (base URL, headers, event hooks)."""
        return {}

    def _make_async_client(self, key: str, http: LimitedAsyncClient) -> Any:
        """The provider's asynchronous client sending through ``http`` (or ``http`` itself)."""
        raise NotImplementedError

    async def _call_async(self, client: Any, query: str, top_k: int) -> list[Hit]:
        """One search request; the hits in the provider's order."""
        raise NotImplementedError

    def _failure(self, exc: Exception) -> Failure | None:
        """What ``exc`` from the SDK means, or None when it is not a request failure."""
        raise NotImplementedError

    async def _search_async(self, client: Any, query: str, top_k: int) -> list[Document]:
        """One query with retries, all within ``timeout``; its Documents, or [] after a failure when
        ``on_error="empty"``."""
        with CallDeadline(self.timeout) as deadline:
            for attempt in range(self.retries + 1):
                with watch_answers() as answered:
                    try:
                        return self._documents(await self._call_async(client, query, top_k), top_k)
                    except Exception as exc:
                        failure = self._judge(exc, answered)
                delay = self.base_delay * 2**attempt
                if not failure.retryable or attempt == self.retries:
                    return self._give_up(failure, query, attempt)
                if not deadline.allows_wait(delay):
                    return self._give_up(failure, query, attempt, deadline.too_late(delay))
                logger.info(
                    "%s: retrying %r after attempt %d: %s", self.provider, query, attempt + 1, failure.describe()
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or gives up")

    def _judge(self, exc: Exception, answered: list[int]) -> Failure:
        """The failure ``exc`` means.

        An exception that is no request failure is re-raised, unless it was raised while an answer was read
        (``answered`` holds its status): then the answer is unusable, which is this component's error too.
        """
        failure = self._classify(exc, answered)
        if failure is None:
            raise exc
        return failure

    def _classify(self, exc: Exception, answered: list[int]) -> Failure | None:
        """``exc`` as a Failure: an HTTP error, an unusable answer (too large, a redirect, undecodable, another
        shape), the provider's own kinds."""
        if isinstance(exc, ProviderHTTPError):
            return http_failure(exc.status, exc.message)
        if isinstance(exc, UnusableAnswer):
            return Failure(exc.status, exc.reason[:MAX_MESSAGE_CHARS], False)
        failure = self._failure(exc)
        if failure is None and answered and isinstance(exc, UNREADABLE_ANSWER):
            said = f"{self._not_format()}: {type(exc).__name__}: {exc}"
            return Failure(answered[-1], said[:MAX_MESSAGE_CHARS], False)
        return failure

    def _give_up(self, failure: Failure, query: str, attempt: int, note: str = "") -> list[Document]:
        """Raise the final ``WebSearchError``, or log it and return [] when ``on_error="empty"``."""
        tried = f"{attempt + 1} attempt(s)" + ("" if failure.retryable else ", not retried")
        message = f"{self.provider} web search for {query!r} failed ({tried}): {failure.describe()}"
        if note:
            message = f"{message}; {note}"
        if self.on_error == "empty":
            logger.warning("%s; returning no documents (on_error='empty')", message)
            return []
        raise WebSearchError(message, provider=self.provider, status=failure.status, query=query)

    def _documents(self, hits: list[Hit], top_k: int) -> list[Document]:
        """New Documents for the first ``top_k`` hits that hold text; a score that is no finite number is dropped."""
        documents = []
        for hit in hits:
            content = hit.pop("content", None)
            if not isinstance(content, str) or not content.strip():
                continue
            meta = {key: value for key, value in hit.items() if value is not None}
            score = meta.get("score")
            if not _is_number(score):
                meta.pop("score", None)
                score = None
            meta.update(provider=self.provider, retrieval_type="web")
            documents.append(Document(content=content, meta=meta, score=score))
        return documents[:top_k]

    async def _search_batch_async(self, client: Any, queries: list[str], top_k: int) -> list[list[Document]]:
        """Every query, at most ``retrieve_thread_num`` requests in flight; one list per query, in query order."""
        gate = asyncio.Semaphore(self.retrieve_thread_num)

        async def gated(query: str) -> list[Document]:
            async with gate:
                return await self._search_async(client, query, top_k)

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(gated(query)) for query in queries]
        except BaseExceptionGroup as failures:
            raise failures.exceptions[0] from None
        return [task.result() for task in tasks]

    def _top_k(self, top_k: int | None) -> int:
        """The run's ``top_k`` (checked against the provider's maximum) or the init value."""
        return self.top_k if top_k is None else check_int("top_k", top_k, 1, self.max_top_k)

    def _async_sdk(self) -> Any:
        """The client ``warm_up_async`` made for this event loop."""
        assert self._clients is not None, "warm_up_async() first"
        return self._clients.sdk


def _is_number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class SingleQueryRuns(WebSearchBase):
    """``run`` / ``run_async`` for one query: ``query`` in, ``documents`` out."""

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """Search the web for one query.

        :param query: Not blank, valid Unicode, at most 1,048,576 characters (``components.checks``).
        :param top_k: Hits to return for this run (1..the provider's maximum); None: the init value.
        :returns: ``{"documents": [...]}``, best first as the provider ranks them.
        :raises ValueError: A bad query or top_k, or no API key set.
        :raises WebSearchError: The provider failed (after retries) and ``on_error="raise"``.
        """
        check_query(query)
        top_k = self._top_k(top_k)
        self.warm_up()
        return {"documents": self._blocking(lambda client: self._search_async(client, query, top_k))}

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """Async twin of ``run``, with the same input, output and errors."""
        check_query(query)
        top_k = self._top_k(top_k)
        await self.warm_up_async()
        return {"documents": await self._search_async(self._async_sdk(), query, top_k)}


class BatchQueryRuns(WebSearchBase):
    """``run`` / ``run_async`` for a batch: ``queries`` in, one list of ``documents`` per query out."""

    @component.output_types(documents=list[list[Document]])
    def run(self, queries: list[str], top_k: int | None = None) -> dict[str, list[list[Document]]]:
        """Search the web for every query, ``retrieve_thread_num`` at a time.

        :param queries: Each one a valid query (``components.checks``; errors name ``queries[i]``); [] gives [].
        :param top_k: Hits per query for this run (1..the provider's maximum); None: the init value.
        :returns: ``{"documents": [[...], ...]}``, one list per query, in query order.
        :raises ValueError: A bad query or top_k, or no API key set.
        :raises WebSearchError: A query failed (the first in query order) and ``on_error="raise"``.
        """
        check_queries(queries)
        top_k = self._top_k(top_k)
        if not queries:
            return {"documents": []}
        self.warm_up()
        return {"documents": self._blocking(lambda client: self._search_batch_async(client, queries, top_k))}

    @component.output_types(documents=list[list[Document]])
    async def run_async(self, queries: list[str], top_k: int | None = None) -> dict[str, list[list[Document]]]:
        """Async twin of ``run``, with the same inputs, output and errors."""
        check_queries(queries)
        top_k = self._top_k(top_k)
        if not queries:
            return {"documents": []}
        await self.warm_up_async()
        return {"documents": await self._search_batch_async(self._async_sdk(), queries, top_k)}
