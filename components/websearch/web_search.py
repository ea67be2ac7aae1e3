"""``WebSearch``: one web search component whose provider is a setting, as UltraRAG's ``websearch_backend`` is.

UltraRAG's ``retriever_websearch`` takes ``websearch_backend`` (``tavily`` | ``exa`` | ``zhipuai``) and a config
per backend. ``WebSearch(backend=...)`` does the same by building the provider's own component
(``ExaWebSearch``, ``TavilyWebSearch``, ``ZhipuAIWebSearch``) and handing every run to it, so the requests,
retries, errors and Documents are exactly that component's. Options only one provider has (Zhipu's
``search_engine``, ``search_intent``, ``search_recency_filter``, ``content_size``) go in ``backend_options``.
Only the chosen provider's SDK is imported.
"""

import importlib
from typing import Any, ClassVar, Self

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.utils import Secret

from components.websearch.websearch_common import SingleQueryRuns, WebSearchBase

# backend -> (single-query component, batch component), as "module:class" under components.websearch
BACKENDS: dict[str, tuple[str, str]] = {
    "exa": ("exa_web_search:ExaWebSearch", "exa_batch_web_search:ExaBatchWebSearch"),
    "tavily": ("tavily_web_search:TavilyWebSearch", "tavily_batch_web_search:TavilyBatchWebSearch"),
    "zhipuai": ("zhipuai_web_search:ZhipuAIWebSearch", "zhipuai_batch_web_search:ZhipuAIBatchWebSearch"),
}


class WebSearchRouter:
    """Backend choice, delegate construction and serialization shared by ``WebSearch`` and ``WebBatchSearch``."""

    _batch: ClassVar[bool]

    def __init__(
        self,
        backend: str = "tavily",
        *,
        api_key: Secret | None = None,
        base_url: str | None = None,
        top_k: int = 5,
        retries: int = 2,
        base_delay: float = 1.0,
        timeout: float = 30.0,
        retrieve_thread_num: int = 4,
        on_error: str = "raise",
        search_kwargs: dict[str, Any] | None = None,
        backend_options: dict[str, Any] | None = None,
    ) -> None:
        """Create the chosen provider's component; nothing is sent until the first run.

        :param backend: ``"exa"``, ``"tavily"`` or ``"zhipuai"``.
        :param api_key: The provider's key; None: its own environment variable (``EXA_API_KEY``,
            ``TAVILY_API_KEY``, ``ZHIPUAI_API_KEY``).
        :param base_url: The provider's API root; None: its public API.
        :param top_k: Hits per query, 1..the provider's maximum (Exa 100, Tavily 20, Zhipu 50).
        :param retries: Extra attempts after a timeout, a lost connection, 408/429 or 5xx, 0..10.
        :param base_delay: Seconds before the first retry, doubled each time, 0..60.
        :param timeout: Seconds to wait for each request, (0, 120].
        :param retrieve_thread_num: Queries in flight at once in the batch component, 1..64.
        :param on_error: ``"raise"`` or ``"empty"`` (a warning and no Documents for a failed query).
        :param search_kwargs: More options for the provider's search call, passed through.
        :param backend_options: Init parameters only this provider has, e.g. ``{"search_engine": "search_pro"}``
            for Zhipu.
        :raises ValueError: An unknown backend, an option the provider does not take, or one out of range.
        """
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {sorted(BACKENDS)}, got {backend!r}")
        if backend_options is not None and not isinstance(backend_options, dict):
            raise ValueError(f"backend_options must be None or a dict, got {backend_options!r}")
        self.backend = backend
        self.api_key = api_key
        self.base_url = base_url
        self.backend_options = dict(backend_options or {})
        options: dict[str, Any] = {
            "base_url": base_url, "top_k": top_k, "retries": retries, "base_delay": base_delay, "timeout": timeout,
            "retrieve_thread_num": retrieve_thread_num, "on_error": on_error, "search_kwargs": search_kwargs,
        }  # fmt: skip
        if api_key is not None:
            options["api_key"] = api_key
        self.delegate: WebSearchBase = self._build(options)

    def _build(self, options: dict[str, Any]) -> WebSearchBase:
        """The provider's component, refusing backend options it does not take."""
        module, name = BACKENDS[self.backend][1 if self._batch else 0].split(":")
        cls = getattr(importlib.import_module(f"components.websearch.{module}"), name)
        unknown = sorted(set(self.backend_options) - set(cls._init_parameters) - set(options))
        if unknown:
            raise ValueError(f"backend_options: {self.backend} takes no option(s) {unknown}")
        delegate: WebSearchBase = cls(**options, **self.backend_options)
        return delegate

    def to_dict(self) -> dict[str, Any]:
        """Serialize the backend and its options; the key stays a reference to its environment variable."""
        delegate = self.delegate
        return default_to_dict(
            self,
            backend=self.backend,
            api_key=self.api_key,
            base_url=self.base_url,
            top_k=delegate.top_k,
            retries=delegate.retries,
            base_delay=delegate.base_delay,
            timeout=delegate.timeout,
            retrieve_thread_num=delegate.retrieve_thread_num,
            on_error=delegate.on_error,
            search_kwargs=delegate.search_kwargs,
            backend_options=self.backend_options,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild the component from ``to_dict`` output."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Create the provider's client (idempotent)."""
        self.delegate.warm_up()


@component
class WebSearch(WebSearchRouter):
    """Searches the web for one query through the provider named by ``backend``.

    ```python
    search = WebSearch(backend="zhipuai", top_k=3, backend_options={"search_engine": "search_pro"})
    docs = search.run(query="retrieval-augmented generation")["documents"]
    ```
    """

    _batch = False

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """Search one query (see ``SingleQueryRuns.run``: same input checks, output and errors)."""
        assert isinstance(self.delegate, SingleQueryRuns)
        return self.delegate.run(query=query, top_k=top_k)

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """Async twin of ``run``."""
        assert isinstance(self.delegate, SingleQueryRuns)
        return await self.delegate.run_async(query=query, top_k=top_k)
