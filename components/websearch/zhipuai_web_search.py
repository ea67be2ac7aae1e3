"""Web search through ZhipuAI's ``web_search`` API: ``query`` -> Documents.

Each request is ``POST {base_url}/web_search`` with ``Authorization: Bearer KEY`` and ``{"search_query",
"search_engine", "count": top_k, "search_intent", "search_recency_filter", "content_size", **search_kwargs}``,
answered by ``{"search_result": [{"title", "content", "link", "media", "icon", "refer", "publish_date"}],
"search_intent": [...]}`` — UltraRAG's ZhipuAI call, with its defaults (``search_std``, no intent recognition,
``noLimit``, ``medium``). Zhipu gives no score; its errors are ``{"error": {"code", "message"}}``.

The request is sent with our ``LimitedAsyncClient`` (httpx; a deadline for the whole request, a size limit on the
answer; ``run`` uses it on a private event loop), as UltraRAG itself sends it with aiohttp: the zhipuai SDK adds
nothing to one documented POST, has no asyncio client, and pins pyjwt below what the mcp SDK needs, so the two could
not share an environment.

Zhipu accepts at most 70 characters of ``search_query``. A longer query is cut to its first 70 characters with
a warning (not an error: questions in a RAG pipeline often run longer, and their start carries the topic);
``meta["query_truncated"]`` says so on each Document.
"""

import logging
from typing import Any

import httpx
from haystack import component
from haystack.utils import Secret

from components.http_limits import LimitedAsyncClient, decode_json
from components.websearch.websearch_common import Hit, SingleQueryRuns, WebSearchBase
from components.websearch.websearch_errors import (
    Failure,
    ProviderHTTPError,
    connection_failure,
    provider_message,
    timeout_failure,
)

logger = logging.getLogger(__name__)

ZHIPUAI_DEFAULT_URL = "https://open.bigmodel.cn/api/paas/v4"
ZHIPUAI_MAX_COUNT = 50
ZHIPUAI_MAX_QUERY_CHARS = 70
RECENCY_FILTERS = ("oneDay", "oneWeek", "oneMonth", "oneYear", "noLimit")
CONTENT_SIZES = ("medium", "high")


class ZhipuAISearchBase(WebSearchBase):
    """ZhipuAI's options and HTTP calls, shared by ``ZhipuAIWebSearch`` and ``ZhipuAIBatchWebSearch``."""

    provider = "zhipuai"
    label = "ZhipuAI"
    results_key = "search_result"
    max_top_k = ZHIPUAI_MAX_COUNT
    _init_parameters = (
        *WebSearchBase._init_parameters, "search_engine", "search_intent", "search_recency_filter", "content_size",
    )  # fmt: skip

    def __init__(
        self,
        *,
        api_key: Secret = Secret.from_env_var("ZHIPUAI_API_KEY"),
        base_url: str | None = None,
        top_k: int = 5,
        retries: int = 2,
        base_delay: float = 1.0,
        timeout: float = 30.0,
        retrieve_thread_num: int = 4,
        on_error: str = "raise",
        search_kwargs: dict[str, Any] | None = None,
        search_engine: str = "search_std",
        search_intent: bool = False,
        search_recency_filter: str = "noLimit",
        content_size: str = "medium",
    ) -> None:
        """Create the component; no client is made and nothing is sent until the first run.

        :param api_key: ZhipuAI's key, by default from ``ZHIPUAI_API_KEY`` (serialized as that reference only).
        :param base_url: The API root ``/web_search`` is appended to; None: ``https://open.bigmodel.cn/api/paas/v4``.
        :param top_k: Hits per query, 1..50 (Zhipu's ``count`` limit).
        :param retries: Extra attempts after a timeout, a lost connection, 408/429 or 5xx, 0..10 (2 makes the
            3 tries of UltraRAG's default ``retries: 3``).
        :param base_delay: Seconds before the first retry, doubled each time, 0..60.
        :param timeout: Seconds for each request with its retries and the waits between them, from sending
            it to the last byte of the answer (a deadline, not per read), (0, 120].
        :param retrieve_thread_num: Queries in flight at once in the batch component, 1..64.
        :param on_error: ``"raise"`` a ``WebSearchError``, or ``"empty"``: log a warning and return no Documents
            for a query that failed.
        :param search_kwargs: More body fields (e.g. ``{"search_domain_filter": "www.example.com"}``).
        :param search_engine: Zhipu's engine, e.g. ``search_std``, ``search_pro``, ``search_pro_sogou``.
        :param search_intent: Let Zhipu decide first whether the query needs a search at all.
        :param search_recency_filter: One of ``oneDay``, ``oneWeek``, ``oneMonth``, ``oneYear``, ``noLimit``.
        :param content_size: ``medium`` (summaries) or ``high`` (longer passages).
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
        if not isinstance(search_engine, str) or not search_engine:
            raise ValueError(f"search_engine must be a non-empty string such as 'search_std', got {search_engine!r}")
        if not isinstance(search_intent, bool):
            raise ValueError(f"search_intent must be true or false, got {search_intent!r}")
        if search_recency_filter not in RECENCY_FILTERS:
            raise ValueError(f"search_recency_filter must be one of {RECENCY_FILTERS}, got {search_recency_filter!r}")
        if content_size not in CONTENT_SIZES:
            raise ValueError(f"content_size must be one of {CONTENT_SIZES}, got {content_size!r}")
        self.search_engine = search_engine
        self.search_intent = search_intent
        self.search_recency_filter = search_recency_filter
        self.content_size = content_size

    def _make_async_client(self, key: str, http: LimitedAsyncClient) -> Any:
        """The httpx client itself: one POST needs no SDK."""
        return http

    def _http_options(self, key: str) -> dict[str, Any]:
        """The API root, the key in the ``Authorization`` header."""
        base = self.base_url or ZHIPUAI_DEFAULT_URL
        headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
        return {"base_url": f"{base}/", "headers": headers}

    def _body(self, query: str, top_k: int) -> tuple[dict[str, Any], bool]:
        """The JSON body of one search, and whether the query was cut to Zhipu's 70 characters."""
        sent, truncated = _fit(query)
        body = {
            "search_query": sent,
            "search_engine": self.search_engine,
            "count": top_k,
            "search_intent": self.search_intent,
            "search_recency_filter": self.search_recency_filter,
            "content_size": self.content_size,
            **self.search_kwargs,
        }
        return body, truncated

    async def _call_async(self, client: Any, query: str, top_k: int) -> list[Hit]:
        body, truncated = self._body(query, top_k)
        return _hits(await client.post("web_search", json=body), truncated)

    def _failure(self, exc: Exception) -> Failure | None:
        if isinstance(exc, httpx.TimeoutException):
            return timeout_failure(self.timeout)
        if isinstance(exc, httpx.TransportError):
            return connection_failure(exc)
        return None


def _hits(response: httpx.Response, truncated: bool) -> list[Hit]:
    """The hits of one answer; an error status is a ``ProviderHTTPError`` (the shape of a 2xx answer is checked
    by a response hook, ``WebSearchBase._check_answer``)."""
    if not response.is_success:
        raise ProviderHTTPError(response.status_code, provider_message(response.text))
    return [_hit(result, truncated) for result in decode_json(response.content)["search_result"]]


def _fit(query: str) -> tuple[str, bool]:
    """The query as sent: its first 70 characters (with a warning) when it is longer; and whether it was cut."""
    if len(query) <= ZHIPUAI_MAX_QUERY_CHARS:
        return query, False
    logger.warning(
        "zhipuai: the query is %d characters long; Zhipu's web_search takes at most %d, so %r is searched",
        len(query),
        ZHIPUAI_MAX_QUERY_CHARS,
        query[:ZHIPUAI_MAX_QUERY_CHARS],
    )
    return query[:ZHIPUAI_MAX_QUERY_CHARS], True


def _hit(fields: dict[str, Any], truncated: bool) -> Hit:
    """One ``search_result`` item as a hit."""
    hit = {
        "content": fields.get("content"),
        "url": fields.get("link"),
        "title": fields.get("title"),
        "media": fields.get("media") or None,
        "publish_date": fields.get("publish_date") or None,
    }
    if truncated:
        hit["query_truncated"] = True
    return hit


@component
class ZhipuAIWebSearch(ZhipuAISearchBase, SingleQueryRuns):
    """Searches the web through ZhipuAI's ``web_search`` API for one query; each hit's content becomes a Document.

    ```python
    search = ZhipuAIWebSearch(top_k=3, search_engine="search_std")  # key from ZHIPUAI_API_KEY
    docs = search.run(query="什么是检索增强生成")["documents"]
    print(docs[0].meta["url"], docs[0].content[:80])
    ```
    """
