"""Web search through Tavily (the tavily-python SDK): ``query`` -> Documents with the content Tavily extracts.

Each request is ``AsyncTavilyClient.search(query, max_results=top_k, timeout=timeout, **search_kwargs)``:
``POST {base_url}/search`` with ``Authorization: Bearer KEY`` and ``{"query", "max_results", ...}``, answered by
``{"results": [{"title", "url", "content", "score"}]}`` — UltraRAG's Tavily call. The SDK is handed our
``LimitedAsyncClient`` (a deadline for the whole request, a size limit on the answer); ``run`` uses it too, on a
private event loop, since the synchronous ``TavilyClient`` reads with ``requests``, whose timeout bounds each read
only.

tavily-python turns 403, 432 and 433 into one ``ForbiddenError`` and drops the status of every error, so the
components watch the answers themselves: an event hook on the httpx client raises ``ProviderHTTPError`` with the
status and Tavily's ``detail.error`` message before the SDK reads the answer. 432 (plan limit) and 433
(pay-as-you-go limit) are then reported as such and never retried; 429 and 5xx are retried.
"""

from typing import Any

import httpx
from haystack import component
from haystack.utils import Secret
from tavily import AsyncTavilyClient  # type: ignore[import-untyped]
from tavily.errors import TimeoutError as TavilyTimeoutError  # type: ignore[import-untyped]

from components.http_limits import LimitedAsyncClient
from components.websearch.websearch_common import Hit, SingleQueryRuns, WebSearchBase
from components.websearch.websearch_errors import (
    Failure,
    ProviderHTTPError,
    connection_failure,
    provider_message,
    timeout_failure,
)

TAVILY_DEFAULT_URL = "https://api.tavily.com"
TAVILY_MAX_RESULTS = 20


class TavilySearchBase(WebSearchBase):
    """Tavily's options and SDK calls, shared by ``TavilyWebSearch`` and ``TavilyBatchWebSearch``."""

    provider = "tavily"
    label = "Tavily"
    results_key = "results"
    results_required = False  # tavily-python reads an answer without "results" as no hits
    max_top_k = TAVILY_MAX_RESULTS

    def __init__(
        self,
        *,
        api_key: Secret = Secret.from_env_var("TAVILY_API_KEY"),
        base_url: str | None = None,
        top_k: int = 5,
        retries: int = 2,
        base_delay: float = 1.0,
        timeout: float = 30.0,
        retrieve_thread_num: int = 4,
        on_error: str = "raise",
        search_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """Create the component; no client is made and nothing is sent until the first run.

        :param api_key: Tavily's key, by default from ``TAVILY_API_KEY`` (serialized as that reference only).
        :param base_url: The API root; None: ``https://api.tavily.com``.
        :param top_k: Hits per query, 1..20 (Tavily's ``max_results`` limit).
        :param retries: Extra attempts after a timeout, a lost connection, 408/429 or 5xx, 0..10 (2 makes the
            3 tries of UltraRAG's default ``retries: 3``).
        :param base_delay: Seconds before the first retry, doubled each time, 0..60.
        :param timeout: Seconds for each request with its retries and the waits between them, from sending
            it to the last byte of the answer (a deadline, not per read), (0, 120] (Tavily's SDK caps it at 120).
        :param retrieve_thread_num: Queries in flight at once in the batch component, 1..64.
        :param on_error: ``"raise"`` a ``WebSearchError``, or ``"empty"``: log a warning and return no Documents
            for a query that failed.
        :param search_kwargs: More options for ``TavilyClient.search`` (e.g. ``{"search_depth": "advanced",
            "topic": "news", "include_domains": [...]}``).
        :raises ValueError: An option outside its allowed range (the message names it and the range).
        """
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            top_k=top_k,
            retries=retries,
            base_delay=base_delay,
            timeout=timeout,
            retrieve_thread_num=retrieve_thread_num,
            on_error=on_error,
            search_kwargs=search_kwargs,
        )

    def _http_options(self, key: str) -> dict[str, Any]:
        """The API root, and the hook that raises ``ProviderHTTPError`` on error answers."""
        return {"base_url": self.base_url or TAVILY_DEFAULT_URL, "event_hooks": {"response": [_araise_for_status]}}

    def _make_async_client(self, key: str, http: LimitedAsyncClient) -> Any:
        """tavily-python's asyncio client over ``http``."""
        return AsyncTavilyClient(api_key=key, api_base_url=self.base_url or TAVILY_DEFAULT_URL, client=http)

    def _request(self, top_k: int) -> dict[str, Any]:
        """The keyword arguments of one ``search`` call besides the query."""
        return {"max_results": top_k, "timeout": self.timeout, **self.search_kwargs}

    async def _call_async(self, client: Any, query: str, top_k: int) -> list[Hit]:
        return _hits(await client.search(query, **self._request(top_k)))

    def _failure(self, exc: Exception) -> Failure | None:
        if isinstance(exc, TavilyTimeoutError):
            return timeout_failure(self.timeout)
        if isinstance(exc, httpx.TransportError):
            return connection_failure(exc)
        return None


async def _araise_for_status(response: httpx.Response) -> None:
    """``httpx`` response hook: an error answer becomes ``ProviderHTTPError`` with Tavily's message (the body, at
    most the size limit, is read first)."""
    if response.status_code >= 400:
        await response.aread()
        raise ProviderHTTPError(response.status_code, provider_message(response.text))


def _hits(answer: dict[str, Any]) -> list[Hit]:
    """Tavily's ``results`` as hits: content, url, title, score (the answer's shape is checked by a response hook,
    ``WebSearchBase._check_answer``)."""
    results = answer.get("results", [])
    return [
        {"content": r.get("content"), "url": r.get("url"), "title": r.get("title"), "score": r.get("score")}
        for r in results
    ]


@component
class TavilyWebSearch(TavilySearchBase, SingleQueryRuns):
    """Searches the web through Tavily for one query; each hit's extracted content becomes a Document.

    ```python
    search = TavilyWebSearch(top_k=3)  # key from TAVILY_API_KEY
    docs = search.run(query="what is retrieval-augmented generation")["documents"]
    print(docs[0].meta["url"], docs[0].meta["score"], docs[0].content[:80])
    ```
    """
