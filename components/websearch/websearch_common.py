"""What every web search component shares: options, clients, retries with back-off, concurrency and Documents.

UltraRAG's ``retriever_websearch`` sends each query under a semaphore of ``retrieve_thread_num``, tries
``retries`` times with a delay that doubles from ``base_delay``, and returns passage strings (an empty list when
every try failed, silently). This base does the same work with Haystack's conventions:

* one query (``_search``) or a batch (``_search_batch``: at most ``retrieve_thread_num`` queries in flight,
  threads for ``run`` and an ``asyncio.Semaphore`` for ``run_async``, results in query order);
* a failed attempt is retried only when a retry can help (see ``websearch_errors``), waiting
  ``base_delay * 2**n`` seconds; the last failure raises ``WebSearchError`` naming provider, HTTP status, the
  provider's message and the query, or, with ``on_error="empty"``, logs that as a warning and returns no
  Documents for that query;
* every hit becomes a new ``Document``: content is the passage text, meta holds ``url``, ``title``,
  ``provider``, ``retrieval_type: "web"`` and ``score`` when the provider gives one (also ``Document.score``).

A provider module subclasses ``WebSearchBase`` and supplies the client, one search call and the mapping of its
SDK's exceptions; ``SingleQueryRuns`` / ``BatchQueryRuns`` add the ``run`` / ``run_async`` sockets.
"""

import asyncio
import concurrent.futures
import logging
import time
import weakref
from typing import Any, ClassVar, Self

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.utils import Secret
from haystack.utils.auth import SecretType

from components.checks import check_base_url, check_int, check_number, check_queries, check_query
from components.websearch.websearch_errors import Failure, ProviderHTTPError, WebSearchError, http_failure

logger = logging.getLogger(__name__)

ON_ERROR_CHOICES = ("raise", "empty")
MAX_RETRIES = 10
MAX_THREADS = 64
Hit = dict[str, Any]  # {"content": str, "url", "title", "score"?, other meta}


class WebSearchBase:
    """Options, clients and the retrying search loop of one provider.

    A provider subclass sets ``provider`` and ``max_top_k`` and implements the five provider methods below
    (no ``abc.ABC`` here: its metaclass clashes with Haystack's ``ComponentMeta``).
    """

    provider: ClassVar[str]
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
        self._client: Any = None
        self._async_client: Any = None
        self._async_loop: weakref.ReferenceType[asyncio.AbstractEventLoop] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component; the API key stays a reference to its environment variable."""
        return default_to_dict(self, **{name: getattr(self, name) for name in self._init_parameters})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild the component from ``to_dict`` output (the key is read from the environment again)."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Create the provider's synchronous client (idempotent); no request is sent."""
        if self._client is None:
            self._client = self._make_client(self._key())

    async def warm_up_async(self) -> None:
        """Create the asynchronous client on the running event loop (again if the loop changed)."""
        loop = asyncio.get_running_loop()
        if self._async_client is None or self._async_loop is None or self._async_loop() is not loop:
            self._async_client = self._make_async_client(self._key())
            self._async_loop = weakref.ref(loop)

    def _key(self) -> str:
        """The resolved API key; a missing one is a ValueError naming the environment variable."""
        key = self.api_key.resolve_value()
        if not key:
            source = self.api_key.to_dict()["env_vars"] if self.api_key.type is SecretType.ENV_VAR else "the token"
            raise ValueError(f"api_key: no {self.provider} API key is set (looked in {source})")
        return str(key)

    def _make_client(self, key: str) -> Any:
        """The provider's synchronous SDK client, pointed at ``base_url`` when one is set."""
        raise NotImplementedError

    def _make_async_client(self, key: str) -> Any:
        """The provider's asynchronous SDK client (or the synchronous one, run in worker threads)."""
        raise NotImplementedError

    def _call(self, client: Any, query: str, top_k: int) -> list[Hit]:
        """One search request; the hits in the provider's order."""
        raise NotImplementedError

    async def _call_async(self, client: Any, query: str, top_k: int) -> list[Hit]:
        """Async twin of ``_call``."""
        raise NotImplementedError

    def _failure(self, exc: Exception) -> Failure | None:
        """What ``exc`` from the SDK means, or None when it is not a request failure (it is then re-raised)."""
        raise NotImplementedError

    def _search(self, query: str, top_k: int) -> list[Document]:
        """One query with retries; its Documents, or [] after a failure when ``on_error="empty"``."""
        for attempt in range(self.retries + 1):
            try:
                return self._documents(self._call(self._client, query, top_k), top_k)
            except Exception as exc:
                failure = self._judge(exc, query, attempt)
            if failure is not None:
                return self._give_up(failure, query, attempt)
            time.sleep(self.base_delay * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or gives up")

    async def _search_async(self, query: str, top_k: int) -> list[Document]:
        """Async twin of ``_search``."""
        for attempt in range(self.retries + 1):
            try:
                return self._documents(await self._call_async(self._async_client, query, top_k), top_k)
            except Exception as exc:
                failure = self._judge(exc, query, attempt)
            if failure is not None:
                return self._give_up(failure, query, attempt)
            await asyncio.sleep(self.base_delay * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or gives up")

    def _judge(self, exc: Exception, query: str, attempt: int) -> Failure | None:
        """The failure that ends the search, or None to retry; an exception that is no request failure re-raises."""
        failure = http_failure(exc.status, exc.message) if isinstance(exc, ProviderHTTPError) else self._failure(exc)
        if failure is None:
            raise exc
        if failure.retryable and attempt < self.retries:
            logger.info("%s: retrying %r after attempt %d: %s", self.provider, query, attempt + 1, failure.describe())
            return None
        return failure

    def _give_up(self, failure: Failure, query: str, attempt: int) -> list[Document]:
        """Raise the final ``WebSearchError``, or log it and return [] when ``on_error="empty"``."""
        tried = f"{attempt + 1} attempt(s)" + ("" if failure.retryable else ", not retried")
        message = f"{self.provider} web search for {query!r} failed ({tried}): {failure.describe()}"
        if self.on_error == "empty":
            logger.warning("%s; returning no documents (on_error='empty')", message)
            return []
        raise WebSearchError(message, provider=self.provider, status=failure.status, query=query)

    def _documents(self, hits: list[Hit], top_k: int) -> list[Document]:
        """New Documents for the first ``top_k`` hits that hold text."""
        documents = []
        for hit in hits:
            content = hit.pop("content", None)
            if not isinstance(content, str) or not content.strip():
                continue
            meta = {key: value for key, value in hit.items() if value is not None}
            score = meta.get("score")
            meta.update(provider=self.provider, retrieval_type="web")
            documents.append(Document(content=content, meta=meta, score=score))
        return documents[:top_k]

    def _search_batch(self, queries: list[str], top_k: int) -> list[list[Document]]:
        """Every query on up to ``retrieve_thread_num`` threads; one list per query, in query order."""
        if not queries:
            return []
        workers = min(self.retrieve_thread_num, len(queries))
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix=f"{self.provider}-search") as pool:
            futures = [pool.submit(self._search, query, top_k) for query in queries]
            try:
                return [future.result() for future in futures]
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)  # queries not yet started are not sent
                raise

    async def _search_batch_async(self, queries: list[str], top_k: int) -> list[list[Document]]:
        """Async twin of ``_search_batch``: at most ``retrieve_thread_num`` requests in flight."""
        gate = asyncio.Semaphore(self.retrieve_thread_num)

        async def gated(query: str) -> list[Document]:
            async with gate:
                return await self._search_async(query, top_k)

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(gated(query)) for query in queries]
        except BaseExceptionGroup as failures:
            raise failures.exceptions[0] from None
        return [task.result() for task in tasks]

    def _top_k(self, top_k: int | None) -> int:
        """The run's ``top_k`` (checked against the provider's maximum) or the init value."""
        return self.top_k if top_k is None else check_int("top_k", top_k, 1, self.max_top_k)


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
        return {"documents": self._search(query, top_k)}

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """Async twin of ``run``, with the same input, output and errors."""
        check_query(query)
        top_k = self._top_k(top_k)
        await self.warm_up_async()
        return {"documents": await self._search_async(query, top_k)}


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
        if queries:
            self.warm_up()
        return {"documents": self._search_batch(queries, top_k)}

    @component.output_types(documents=list[list[Document]])
    async def run_async(self, queries: list[str], top_k: int | None = None) -> dict[str, list[list[Document]]]:
        """Async twin of ``run``, with the same inputs, output and errors."""
        check_queries(queries)
        top_k = self._top_k(top_k)
        if queries:
            await self.warm_up_async()
        return {"documents": await self._search_batch_async(queries, top_k)}
