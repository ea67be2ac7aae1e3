"""Web search through Exa (the exa-py SDK): ``query`` -> Documents with the page text of each hit.

Each request is ``AsyncExa.search(query, num_results=top_k, contents={"text": True}, **search_kwargs)``:
``POST {base_url}/search`` with the key in ``x-api-key`` and ``{"query", "numResults", "contents": {"text":
true}}``, answered by ``{"results": [{"title", "url", "id", "publishedDate", "author", "score", "text"}]}``. This
is UltraRAG's Exa call (``search_and_contents(q, num_results=k, text=True)``, which exa-py 2.x deprecates in
favour of this one).

``AsyncExa`` sends through our ``LimitedAsyncClient`` (a deadline for the whole request, a size limit on the
answer). ``run`` uses it too, on a private event loop: exa-py's synchronous ``Exa`` posts with the ``requests``
module itself, whose timeout bounds each read only and which no caller can hand a session or a size limit.

exa-py reports an HTTP error as ``ValueError("Request failed with status code N: <body>")`` and a timeout as
``ExaTimeoutError``; both are read here into a status and Exa's own message.
"""

import re
from typing import Any

import httpx
from exa_py import AsyncExa
from exa_py.errors import ExaTimeoutError
from haystack import component
from haystack.utils import Secret

from components.http_limits import LimitedAsyncClient
from components.websearch.websearch_common import Hit, SingleQueryRuns, WebSearchBase
from components.websearch.websearch_errors import (
    Failure,
    connection_failure,
    http_failure,
    timeout_failure,
)

EXA_DEFAULT_URL = "https://api.exa.ai"
EXA_MAX_RESULTS = 100
_STATUS_ERROR = re.compile(r"Request failed with status code (\d{3}): (.*)", re.DOTALL)


class ExaSearchBase(WebSearchBase):
    """Exa's options and SDK calls, shared by ``ExaWebSearch`` and ``ExaBatchWebSearch``."""

    provider = "exa"
    label = "Exa"
    results_key = "results"
    max_top_k = EXA_MAX_RESULTS

    def __init__(
        self,
        *,
        api_key: Secret = Secret.from_env_var("EXA_API_KEY"),
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

        :param api_key: Exa's key, by default from ``EXA_API_KEY`` (serialized as that reference, never the value).
        :param base_url: The API root; None: ``https://api.exa.ai``.
        :param top_k: Hits per query, 1..100 (Exa's ``numResults`` limit).
        :param retries: Extra attempts after a timeout, a lost connection, 408/429 or 5xx, 0..10 (2 makes the
            3 tries of UltraRAG's default ``retries: 3``).
        :param base_delay: Seconds before the first retry, doubled each time, 0..60.
        :param timeout: Seconds for each request with its retries and the waits between them, from sending
            it to the last byte of the answer (a deadline, not per read), (0, 120].
        :param retrieve_thread_num: Queries in flight at once in the batch component, 1..64.
        :param on_error: ``"raise"`` a ``WebSearchError``, or ``"empty"``: log a warning and return no Documents
            for a query that failed.
        :param search_kwargs: More options for ``Exa.search`` (e.g. ``{"type": "neural", "include_domains":
            [...]}``, or ``contents`` to replace ``{"text": True}``).
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

    def _make_async_client(self, key: str, http: LimitedAsyncClient) -> AsyncExa:
        """exa-py's asyncio client, sending through ``http``."""
        return LimitedAsyncExa(http, api_key=key, api_base=self.base_url or EXA_DEFAULT_URL, timeout=self.timeout)

    def _request(self, top_k: int) -> dict[str, Any]:
        """The keyword arguments of one ``search`` call besides the query."""
        return {"num_results": top_k, "contents": {"text": True}, "timeout": self.timeout, **self.search_kwargs}

    async def _call_async(self, client: AsyncExa, query: str, top_k: int) -> list[Hit]:
        response = await client.search(query, **self._request(top_k))  # its shape is checked by a response hook
        return [_hit(result) for result in response.results]

    def _failure(self, exc: Exception) -> Failure | None:
        if isinstance(exc, ExaTimeoutError):
            return timeout_failure(self.timeout)
        if isinstance(exc, httpx.TransportError):
            return connection_failure(exc)
        said = _STATUS_ERROR.match(str(exc)) if isinstance(exc, ValueError) else None
        return http_failure(int(said.group(1)), said.group(2)) if said else None


class LimitedAsyncExa(AsyncExa):
    """``AsyncExa`` whose requests go through a given ``LimitedAsyncClient`` instead of the one it would make."""

    def __init__(self, http: LimitedAsyncClient, **options: Any) -> None:
        super().__init__(**options)
        self._limited = http

    @property
    def client(self) -> httpx.AsyncClient:
        """The client every ``async_request`` sends with (exa-py reads this property for each request)."""
        return self._limited

    async def aclose(self) -> None:
        """Close the limited client's connections."""
        await self._limited.aclose()


def _hit(result: Any) -> Hit:
    """One exa-py ``Result`` as a hit: text, url, title, score, published date, author, Exa's id."""
    return {
        "content": result.text,
        "url": result.url,
        "title": result.title,
        "score": result.score,
        "published_date": result.published_date,
        "author": result.author,
        "exa_id": result.id,
    }


@component
class ExaWebSearch(ExaSearchBase, SingleQueryRuns):
    """Searches the web through Exa for one query; the page text of each hit becomes a Document.

    ```python
    search = ExaWebSearch(top_k=3)  # key from EXA_API_KEY
    docs = search.run(query="what is retrieval-augmented generation")["documents"]
    print(docs[0].meta["url"], docs[0].content[:80])
    ```
    """
