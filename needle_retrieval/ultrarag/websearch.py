"""UltraRAG's `websearch_backend` and `websearch_backend_configs`, mapped onto ``components.websearch``.

`websearch_backend` (tavily | exa | zhipuai, any case; null: tavily, UltraRAG's default) chooses the provider;
each block of `websearch_backend_configs` becomes the init parameters of our component for that provider
(``WebSearchChoice.options``), so every block is checked and usable, not only the chosen one (the tools take the
provider per call). A key the chosen provider's block does not take is an error; one in another provider's block,
or a block of a provider needle does not know, is ignored with the caller's warning, as UltraRAG never reads it.

- `api_key`: a ``Secret`` reading EXA_API_KEY / TAVILY_API_KEY / ZHIPUAI_API_KEY (UltraRAG's fallbacks). An empty
  key means "from that variable"; a literal key is moved into it for this run with a warning
  (``needle_retrieval.ultrarag.keys``) and is never serialized.
- `retries`: UltraRAG counts tries (`retries: 3` = 3 tries); our components count retries after the first try,
  so N becomes N - 1 (1..11 tries).
- `base_delay`: seconds before the first retry, doubled each time (the same in both).
- `search_kwargs`: passed to the provider's call as UltraRAG passes them. Exa's content options (`text`,
  `highlights`, `summary`, ...: what UltraRAG's `search_and_contents` takes beside the query) go into Exa's
  `contents` with `text: true`; a `num_results` there is dropped, because UltraRAG's top_k replaces it too.
- zhipuai: `base_url` is UltraRAG's full endpoint (``.../api/paas/v4/web_search``); ``ZhipuAIWebSearch`` takes the
  API root and appends ``/web_search``, so the suffix is cut off (an endpoint without it is an error).
  `search_engine`, `search_intent`, `search_recency_filter` and `content_size` are the component's own options.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from components.checks import check_base_url
from needle_retrieval.ultrarag.keys import take_literal
from needle_retrieval.ultrarag.options import (
    OPTIONAL_BOOL,
    OPTIONAL_STRING,
    OptionType,
    check_options,
    check_types,
    options_block,
)
from needle_retrieval.ultrarag.values import unknown_keys

if TYPE_CHECKING:  # the components import their provider's SDK: only when a component is built
    from components.websearch.web_batch_search import WebBatchSearch
    from components.websearch.web_search import WebSearch

WEB_BACKENDS = ("tavily", "exa", "zhipuai")
KEY_VARIABLES = {"exa": "EXA_API_KEY", "tavily": "TAVILY_API_KEY", "zhipuai": "ZHIPUAI_API_KEY"}
COMMON_KEYS = ("api_key", "retries", "base_delay", "search_kwargs")
ZHIPUAI_ONLY = ("search_engine", "search_intent", "search_recency_filter", "content_size")
KEYS = {"exa": COMMON_KEYS, "tavily": COMMON_KEYS, "zhipuai": (*COMMON_KEYS, "base_url", *ZHIPUAI_ONLY)}
ZHIPUAI_ENDPOINT = "/web_search"
MAX_TRIES = 11  # our components' 10 retries + the first try
# The types of the keys passed on as they are (null: the component's default); the others are checked where mapped.
TYPES: dict[str, OptionType] = {
    "api_key": OPTIONAL_STRING,
    "search_engine": OPTIONAL_STRING,
    "search_intent": OPTIONAL_BOOL,
    "search_recency_filter": OPTIONAL_STRING,
    "content_size": OPTIONAL_STRING,
}
# exa-py's NESTED_CONTENTS_FIELDS: what `search_and_contents` (UltraRAG's call) nests under `contents`.
EXA_CONTENTS = (
    "text", "summary", "highlights", "context", "subpages", "subpage_target", "livecrawl", "livecrawl_timeout",
    "max_age_hours", "snapshot_as_of", "filter_empty_results", "extras",
)  # fmt: skip


@dataclass(frozen=True)
class WebSearchChoice:
    """The web search a parameter file chooses.

    ``backend``: the provider `websearch_backend` names. ``options``: for each of tavily, exa and zhipuai, the init
    parameters of its component (``TavilyWebSearch``, ``ExaWebSearch``, ``ZhipuAIWebSearch`` and their batch
    twins) that the file's block sets: ``api_key`` (a Secret), ``retries``, ``base_delay``, ``search_kwargs``, and
    for zhipuai ``base_url``, ``search_engine``, ``search_intent``, ``search_recency_filter``, ``content_size``.
    """

    backend: str = "tavily"
    options: dict[str, dict[str, Any]] = field(default_factory=dict)


def web_search_choice(backend: Any, configs: Any, ignored: list[str]) -> WebSearchChoice:
    """The choice of `websearch_backend` BACKEND with `websearch_backend_configs` CONFIGS; the names of the keys and
    blocks UltraRAG would not read (see the module docstring) are added to IGNORED.

    :raises ValueError: An unknown provider, a key of the chosen provider's block it does not take, or a value that
        cannot be mapped (naming it).
    """
    name = "tavily" if backend in (None, "") else backend
    if not isinstance(name, str) or name.lower() not in WEB_BACKENDS:
        raise ValueError(f"websearch_backend {backend!r} is not supported; choose one of {', '.join(WEB_BACKENDS)}")
    configs = options_block("websearch_backend_configs", configs)
    ignored += unknown_keys("websearch_backend_configs", configs, WEB_BACKENDS)
    blocks = {p: options_block(f"websearch_backend_configs.{p}", configs.get(p)) for p in WEB_BACKENDS}
    for provider, block in blocks.items():
        where = f"websearch_backend_configs.{provider}"
        if provider == name.lower():
            check_options(where, block, KEYS[provider])
        else:
            ignored += unknown_keys(where, block, KEYS[provider])
    options = {provider: _provider_options(provider, blocks[provider]) for provider in WEB_BACKENDS}
    return WebSearchChoice(name.lower(), options)


def _provider_options(provider: str, block: Mapping[str, Any]) -> dict[str, Any]:
    """The init parameters of PROVIDER's component from the keys it takes of its block of the file."""
    from haystack.utils import Secret

    where = f"websearch_backend_configs.{provider}"
    check_types(where, block, TYPES)
    variable = KEY_VARIABLES[provider]
    take_literal(f"{where}.api_key", block.get("api_key"), variable)
    options: dict[str, Any] = {"api_key": Secret.from_env_var(variable, strict=False)}
    options["retries"] = _tries(where, block.get("retries", 3)) - 1
    options["base_delay"] = _delay(where, block.get("base_delay", 1.0))
    options["search_kwargs"] = _search_kwargs(where, provider, block.get("search_kwargs"))
    if provider == "zhipuai":
        if block.get("base_url") not in (None, ""):
            options["base_url"] = _zhipuai_root(block["base_url"])
        options |= {key: block[key] for key in ZHIPUAI_ONLY if block.get(key) is not None}
        _check_zhipuai(where, options)
    return options


def _tries(where: str, value: Any) -> int:
    """UltraRAG's `retries` (a number of tries), 1..MAX_TRIES."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TRIES:
        raise ValueError(
            f"{where}.retries counts tries (UltraRAG's `retries: 3` is 3 tries) and must be an integer in "
            f"[1, {MAX_TRIES}], got {value!r}"
        )
    return value


def _delay(where: str, value: Any) -> float:
    """`base_delay` in seconds, 0..60."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 60:
        raise ValueError(f"{where}.base_delay must be a number of seconds in [0, 60], got {value!r}")
    return float(value)


def _search_kwargs(where: str, provider: str, value: Any) -> dict[str, Any]:
    """`search_kwargs` as our component passes them; Exa's content options nested as UltraRAG's SDK call does."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{where}.search_kwargs must be a mapping of the provider's options, got {value!r}")
    kwargs = dict(value)
    if provider != "exa":
        return kwargs
    kwargs.pop("num_results", None)  # UltraRAG sets num_results to top_k after search_kwargs: top_k wins
    contents = {key: kwargs.pop(key) for key in EXA_CONTENTS if key in kwargs}
    if contents:
        kwargs["contents"] = {"text": True, **contents}
    return kwargs


def _zhipuai_root(value: Any) -> str:
    """The API root of UltraRAG's zhipuai `base_url`, the full web_search endpoint."""
    where = "websearch_backend_configs.zhipuai.base_url"
    endpoint = value.rstrip("/") if isinstance(value, str) else value
    if not isinstance(endpoint, str) or not endpoint.endswith(ZHIPUAI_ENDPOINT):
        raise ValueError(
            f"{where} is the web_search endpoint UltraRAG posts to (e.g. "
            f"https://open.bigmodel.cn/api/paas/v4/web_search), got {value!r}"
        )
    root = endpoint.removesuffix(ZHIPUAI_ENDPOINT)
    try:
        check_base_url(root, where)
    except ValueError as error:
        raise ValueError(f"{error} (from {value!r})") from None
    return root


def _check_zhipuai(where: str, options: dict[str, Any]) -> None:
    """Build ZhipuAIWebSearch once with OPTIONS (nothing is sent), so a bad value fails now, naming its key."""
    from components.websearch.zhipuai_web_search import ZhipuAIWebSearch

    try:
        ZhipuAIWebSearch(**options)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


def retriever_url(value: Any) -> str:
    """UltraRAG's `retriever_url` (the deploy server of `retriever_deploy_search`), with http:// added when it
    names no scheme, as UltraRAG's client adds it."""
    if value in (None, ""):
        value = "http://127.0.0.1:64501"
    if not isinstance(value, str):
        raise ValueError(f"retriever_url must be a URL such as http://127.0.0.1:64501, got {value!r}")
    url = value.strip()
    url = url if url.startswith(("http://", "https://")) else f"http://{url}"
    check_base_url(url, "retriever_url")
    return url


def build_web_search(
    choice: WebSearchChoice, backend: str | None, batch: bool, top_k: int, retrieve_thread_num: int
) -> "WebSearch | WebBatchSearch":
    """``WebSearch`` (or ``WebBatchSearch`` with BATCH) for BACKEND (None: the chosen one), with its options.

    :raises ValueError: An unknown backend, or an option the provider's component refuses (e.g. a top_k over
        its maximum).
    """
    from haystack.utils import Secret

    from components.websearch import WebBatchSearch, WebSearch

    name = choice.backend if backend is None else backend
    if name not in WEB_BACKENDS:
        raise ValueError(f"web search backend {name!r} is not supported; choose one of {', '.join(WEB_BACKENDS)}")
    options = dict(choice.options.get(name) or {"api_key": Secret.from_env_var(KEY_VARIABLES[name], strict=False)})
    extras = {key: options.pop(key) for key in ZHIPUAI_ONLY if key in options}
    cls: type[WebSearch | WebBatchSearch] = WebBatchSearch if batch else WebSearch
    return cls(name, top_k=top_k, retrieve_thread_num=retrieve_thread_num, backend_options=extras, **options)
