"""Web search components (exa-py and tavily-python SDKs, ZhipuAI over httpx) against local protocol servers.

Each provider's server (tests/support/servers/websearch.py) follows its documented request, answer and error
shapes; tests check the requests on the server side, the Documents, concurrency and order, every error path
(401, 429 then success, Tavily's 432/433, 5xx after retries, timeouts, unreachable server, unreadable answer),
``on_error="empty"``, serialization without the key, ``run_async``, ``WebSearch``'s backend choice, and both YAML
pipelines.
"""

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Pipeline
from haystack.utils import Secret

import components  # noqa: F401  (allowlists our modules for Pipeline.loads)
from components.websearch import (
    ExaBatchWebSearch,
    ExaWebSearch,
    TavilyBatchWebSearch,
    TavilyWebSearch,
    WebBatchSearch,
    WebSearch,
    WebSearchError,
    ZhipuAIBatchWebSearch,
    ZhipuAIWebSearch,
)
from needle_retrieval.pipelines import files as pf
from tests.support.paths import SAMPLE
from tests.support.servers.websearch import API_KEY, ZHIPU_PATH, State, serve

PROVIDERS = ("exa", "tavily", "zhipuai")
SINGLE = {"exa": ExaWebSearch, "tavily": TavilyWebSearch, "zhipuai": ZhipuAIWebSearch}
BATCH = {"exa": ExaBatchWebSearch, "tavily": TavilyBatchWebSearch, "zhipuai": ZhipuAIBatchWebSearch}
ENV = {"exa": "EXA_API_KEY", "tavily": "TAVILY_API_KEY", "zhipuai": "ZHIPUAI_API_KEY"}
FAST = {"base_delay": 0.01, "timeout": 10.0}


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each provider in turn, its key variable set to the servers' key."""
    name: str = request.param
    monkeypatch.setenv(ENV[name], API_KEY)
    return name


@pytest.fixture
def server(provider: str) -> Iterator[tuple[str, State]]:
    with serve(provider) as running:
        yield running


def make(provider: str, url: str, *, batch: bool = False, **options: Any) -> Any:
    """The provider's component pointed at the local server, with fast retries unless overridden."""
    return (BATCH if batch else SINGLE)[provider](base_url=url, **{**FAST, **options})


def expected_body(provider: str, query: str, top_k: int) -> dict[str, Any]:
    """The request body each provider documents for a plain search."""
    if provider == "exa":
        return {"query": query, "numResults": top_k, "contents": {"text": True}}
    if provider == "tavily":
        return {"query": query, "max_results": top_k}
    return {"search_query": query, "search_engine": "search_std", "count": top_k, "search_intent": False,
            "search_recency_filter": "noLimit", "content_size": "medium"}  # fmt: skip


def test_request_shape_and_documents(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    docs = make(provider, url, top_k=3).run(query="solar eclipse")["documents"]

    [request] = state.log
    assert request["path"] == (ZHIPU_PATH if provider == "zhipuai" else "/search")
    if provider == "exa":
        assert request["headers"]["x-api-key"] == API_KEY
    else:
        assert request["headers"]["authorization"] == f"Bearer {API_KEY}"
    assert request["body"] == expected_body(provider, "solar eclipse", 3)

    assert [d.content for d in docs] == [f"Passage {i} about solar eclipse." for i in (1, 2, 3)]
    first = docs[0].meta
    assert first["url"] == f"https://example.com/{provider}/solar eclipse/1"
    assert first["title"] == "solar eclipse #1"
    assert first["provider"] == provider
    assert first["retrieval_type"] == "web"
    if provider == "zhipuai":
        assert "score" not in first
        assert docs[0].score is None
    else:
        assert first["score"] == docs[0].score == 0.99


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.timeout(60)
async def test_batch_runs_concurrently_in_query_order(provider: str, server: tuple[str, State], mode: str) -> None:
    url, state = server
    state.delay_s = 0.3
    search = make(provider, url, batch=True, top_k=1, retrieve_thread_num=4)
    queries = [f"query {i}" for i in range(10)]
    out = search.run(queries=queries) if mode == "sync" else await search.run_async(queries=queries)
    assert [docs[0].meta["title"] for docs in out["documents"]] == [f"query {i} #1" for i in range(10)]
    assert len(state.log) == 10
    assert 2 <= state.max_in_flight <= 4


async def test_run_async_single_query(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    docs = (await make(provider, url, top_k=2).run_async(query="tide tables"))["documents"]
    assert [d.meta["title"] for d in docs] == ["tide tables #1", "tide tables #2"]
    assert state.log[0]["body"] == expected_body(provider, "tide tables", 2)


def test_runtime_top_k_overrides_init(provider: str, server: tuple[str, State]) -> None:
    url, _ = server
    assert len(make(provider, url, top_k=5).run(query="q", top_k=2)["documents"]) == 2


def test_bad_key_is_401_and_not_retried(
    provider: str, server: tuple[str, State], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, state = server
    monkeypatch.setenv(ENV[provider], "wrong-key")
    with pytest.raises(
        WebSearchError, match=rf"{provider} web search for 'q' failed \(1 attempt\(s\), not retried\): HTTP 401"
    ) as error:
        make(provider, url, retries=3).run(query="q")
    assert error.value.status == 401
    assert error.value.provider == provider
    assert len(state.log) == 1


def test_quota_429_is_retried_then_succeeds(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    state.fail = [429]
    docs = make(provider, url, retries=2).run(query="q")["documents"]
    assert docs
    assert len(state.log) == 2


def test_server_error_fails_after_retries(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    state.fail = [500, 502, 503]
    with pytest.raises(WebSearchError, match=r"failed \(3 attempt\(s\)\): HTTP 503") as error:
        make(provider, url, retries=2).run(query="q")
    assert error.value.status == 503
    assert len(state.log) == 3


@pytest.mark.parametrize(("status", "words"), [(432, "plan's set usage limit"), (433, "pay-as-you-go limit")])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_tavily_plan_limits_are_named_and_not_retried(
    monkeypatch: pytest.MonkeyPatch, status: int, words: str, mode: str
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", API_KEY)
    with serve("tavily") as (url, state):
        state.fail = [status]
        search = make("tavily", url, retries=3)
        with pytest.raises(WebSearchError, match=rf"not retried\): HTTP {status}: .*{words}") as error:
            await search.run_async(query="q") if mode == "async" else search.run(query="q")
        assert error.value.status == status
        assert len(state.log) == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.timeout(30)
async def test_timeout_is_an_error_not_a_hang(provider: str, server: tuple[str, State], mode: str) -> None:
    url, state = server
    state.delay_s = 20
    search = make(provider, url, retries=1, timeout=0.3)
    # the first attempt uses all of the timeout, which bounds the retries too: no second attempt is made
    said = r"failed \(1 attempt\(s\)\): no answer within the timeout of 0.3 s; no retry: .* the timeout of 0.3 s"
    with pytest.raises(WebSearchError, match=said) as error:
        await search.run_async(query="q") if mode == "async" else search.run(query="q")
    assert error.value.status is None
    assert len(state.log) == 1


@pytest.mark.timeout(30)
def test_unreachable_server_is_an_error(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again at once: nothing listens there
    url = f"http://127.0.0.1:{port}" + ("/api/paas/v4" if provider == "zhipuai" else "")
    with pytest.raises(WebSearchError, match=r"failed \(2 attempt\(s\)\): could not connect"):
        make(provider, url, retries=1).run(query="q")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_on_error_empty_keeps_the_other_queries(
    provider: str, server: tuple[str, State], mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    url, state = server
    state.fail_queries = {"broken query": 500}
    search = make(provider, url, batch=True, retries=1, on_error="empty", retrieve_thread_num=2)
    queries = ["first", "broken query", "third"]
    with caplog.at_level(logging.WARNING, logger="components.websearch"):
        out = search.run(queries=queries) if mode == "sync" else await search.run_async(queries=queries)
    assert [len(docs) for docs in out["documents"]] == [5, 0, 5]
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"{provider} web search for 'broken query' failed (2 attempt(s)): HTTP 500" in warning
    assert "on_error='empty'" in warning


def test_batch_raises_the_failed_query_by_default(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    state.fail_queries = {"broken query": 401}
    with pytest.raises(WebSearchError, match="'broken query'") as error:
        make(provider, url, batch=True).run(queries=["a", "broken query", "c"])
    assert error.value.query == "broken query"


def test_empty_batch_sends_nothing(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    assert make(provider, url, batch=True).run(queries=[]) == {"documents": []}
    assert state.log == []


@pytest.mark.parametrize("provider", ["exa", "zhipuai"], indirect=True)
def test_answer_without_results_is_an_error_not_retried(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    state.malformed = True
    with pytest.raises(
        WebSearchError, match=r"not retried\): HTTP 200: the answer is not the \w+ format: no '\w+' list"
    ) as error:
        make(provider, url, retries=2).run(query="q")
    assert error.value.status == 200
    assert len(state.log) == 1


def test_tavily_sdk_reads_an_answer_without_results_as_no_hits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", API_KEY)
    with serve("tavily") as (url, state):
        state.malformed = True  # tavily-python fills in "results": [] itself
        assert make("tavily", url).run(query="q") == {"documents": []}


def test_search_kwargs_and_zhipu_options_reach_the_request(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    extra = {"exa": {"type": "neural"}, "tavily": {"search_depth": "advanced"},
             "zhipuai": {"search_domain_filter": "example.com"}}[provider]  # fmt: skip
    options: dict[str, Any] = {"search_kwargs": extra}
    if provider == "zhipuai":
        options.update(
            search_engine="search_pro", search_intent=True, search_recency_filter="oneWeek", content_size="high"
        )
    make(provider, url, top_k=2, **options).run(query="q")
    body = state.log[0]["body"]
    assert extra.items() <= body.items()
    if provider == "zhipuai":
        assert body["search_engine"] == "search_pro"
        assert body["search_intent"] is True
        assert body["search_recency_filter"] == "oneWeek"
        assert body["content_size"] == "high"


def test_zhipu_truncates_long_queries_to_70_characters_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ZHIPUAI_API_KEY", API_KEY)
    query = "检索增强生成" * 20  # 120 characters; the server refuses more than 70 with a 400
    with serve("zhipuai") as (url, state), caplog.at_level(logging.WARNING, logger="components.websearch"):
        docs = make("zhipuai", url).run(query=query)["documents"]
    assert state.log[0]["body"]["search_query"] == query[:70]
    assert docs[0].meta["query_truncated"] is True
    assert any("120 characters long" in r.getMessage() for r in caplog.records)


def test_serialization_keeps_only_the_key_reference(provider: str) -> None:
    for cls in (SINGLE[provider], BATCH[provider]):
        search = cls(base_url="http://127.0.0.1:1", top_k=3, retries=1, retrieve_thread_num=8, on_error="empty")
        data = search.to_dict()
        assert API_KEY not in str(data)
        assert data["init_parameters"]["api_key"] == {"type": "env_var", "env_vars": [ENV[provider]], "strict": True}
        again = cls.from_dict(data)
        assert again.to_dict() == data
        assert again.retrieve_thread_num == 8
        assert again.on_error == "empty"
    if provider == "zhipuai":
        params = ZhipuAIWebSearch(search_engine="search_pro").to_dict()["init_parameters"]
        assert params["search_engine"] == "search_pro"


def test_missing_key_is_a_clear_error(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV[provider])
    with pytest.raises(ValueError, match=ENV[provider]):
        SINGLE[provider](base_url="http://127.0.0.1:1").run(query="q")


@pytest.mark.parametrize(
    ("cls", "options", "match"),
    [
        (TavilyWebSearch, {"top_k": 21}, r"top_k must be an integer in \[1, 20\]"),
        (ExaWebSearch, {"top_k": 0}, r"top_k must be an integer in \[1, 100\]"),
        (ZhipuAIWebSearch, {"top_k": 51}, r"top_k must be an integer in \[1, 50\]"),
        (ExaWebSearch, {"retries": -1}, r"retries must be an integer in \[0, 10\]"),
        (TavilyWebSearch, {"base_delay": -1}, r"base_delay must be a finite number in \[0, 60\]"),
        (TavilyWebSearch, {"timeout": 0}, r"timeout must be a finite number in \(0, 120\]"),
        (ExaBatchWebSearch, {"retrieve_thread_num": 0}, r"retrieve_thread_num must be an integer in \[1, 64\]"),
        (ExaWebSearch, {"on_error": "ignore"}, r"on_error must be one of \('raise', 'empty'\)"),
        (ExaWebSearch, {"base_url": "ftp://x"}, "base_url must start with http:// or https://"),
        (ExaWebSearch, {"search_kwargs": ["type"]}, "search_kwargs must be None or a dict"),
        (ZhipuAIWebSearch, {"search_recency_filter": "today"}, "search_recency_filter must be one of"),
        (ZhipuAIWebSearch, {"content_size": "huge"}, "content_size must be one of"),
        (ZhipuAIWebSearch, {"search_engine": ""}, "search_engine must be a non-empty string"),
    ],
)
def test_bad_init_parameters_are_refused(cls: Any, options: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cls(**options)


def test_bad_queries_are_refused_before_any_request(provider: str, server: tuple[str, State]) -> None:
    url, state = server
    with pytest.raises(ValueError, match="query is empty"):
        make(provider, url).run(query="  ")
    with pytest.raises(ValueError, match="batch component"):
        make(provider, url).run(query=["a"])
    with pytest.raises(ValueError, match=r"queries\[1\] is empty"):
        make(provider, url, batch=True).run(queries=["a", ""])
    with pytest.raises(ValueError, match=r"top_k must be an integer"):
        make(provider, url).run(query="a", top_k=0)
    assert state.log == []


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_web_search_delegates_to_the_chosen_backend(provider: str, server: tuple[str, State], mode: str) -> None:
    url, state = server
    search = WebSearch(backend=provider, base_url=url, top_k=2, base_delay=0.01)
    batch = WebBatchSearch(backend=provider, base_url=url, top_k=1, retrieve_thread_num=2)
    if mode == "sync":
        docs = search.run(query="q")["documents"]
        per_query = batch.run(queries=["a", "b"])["documents"]
    else:
        docs = (await search.run_async(query="q"))["documents"]
        per_query = (await batch.run_async(queries=["a", "b"]))["documents"]
    assert type(search.delegate) is SINGLE[provider]
    assert type(batch.delegate) is BATCH[provider]
    assert [d.meta["provider"] for d in docs] == [provider, provider]
    assert [[d.meta["title"] for d in docs] for docs in per_query] == [["a #1"], ["b #1"]]
    assert len(state.log) == 3


def test_web_search_serializes_backend_and_options(provider: str) -> None:
    options = {"search_engine": "search_pro"} if provider == "zhipuai" else {}
    search = WebSearch(backend=provider, top_k=4, on_error="empty", backend_options=options)
    data = search.to_dict()
    assert data["init_parameters"]["backend"] == provider
    assert data["init_parameters"]["api_key"] is None
    again = WebSearch.from_dict(data)
    assert again.to_dict() == data
    assert again.delegate.top_k == 4
    key = Secret.from_env_var("MY_KEY")
    assert WebBatchSearch(backend=provider, api_key=key).to_dict()["init_parameters"]["api_key"]["env_vars"] == [
        "MY_KEY"
    ]


def test_web_search_refuses_unknown_backend_and_options() -> None:
    with pytest.raises(ValueError, match=r"backend must be one of \['exa', 'tavily', 'zhipuai'\], got 'bing'"):
        WebSearch(backend="bing")
    with pytest.raises(ValueError, match=r"backend_options: exa takes no option\(s\) \['search_engine'\]"):
        WebSearch(backend="exa", backend_options={"search_engine": "search_std"})
    with pytest.raises(ValueError, match="top_k must be an integer"):
        WebBatchSearch(backend="tavily", top_k=50)


def test_web_search_yaml_runs_against_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", API_KEY)
    with serve("tavily") as (url, state):
        data = pf.load_template("web_search")
        pf.set_init_param(data, "web.base_url", url)
        docs = Pipeline.loads(yaml.safe_dump(data)).run({"web": {"query": "q"}})["web"]["documents"]
    assert [d.meta["title"] for d in docs] == [f"q #{i}" for i in range(1, 6)]
    assert state.log[0]["body"]["max_results"] == 5


@pytest.mark.timeout(300)
def test_web_local_mix_search_yaml_joins_web_and_index(
    tmp_path: Path, minilm_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = pf.load_template("dense_index")
    pf.set_init_param(index, "embedder.model", minilm_path)
    pf.set_init_param(index, "embedder.embedding_path", str(tmp_path / "emb.npy"))
    pf.set_init_param(index, "writer.document_store.path", str(tmp_path / "dense"))
    pf.build(index).run({"reader": {"path": str(SAMPLE)}})

    monkeypatch.setenv("TAVILY_API_KEY", API_KEY)
    with serve("tavily") as (url, state):
        mix = pf.load_template("web_local_mix_search")
        pf.set_init_param(mix, "web.base_url", url)
        pf.set_init_param(mix, "embedder.model", minilm_path)
        pf.set_init_param(mix, "dense.document_store.path", str(tmp_path / "dense"))
        pipeline = Pipeline.loads(yaml.safe_dump(mix))
        query = "compress data with gzip"
        docs = pipeline.run({"web": {"query": query}, "embedder": {"text": query}})["joiner"]["documents"]
        state.fail_queries = {query: 500}  # on_error: empty in the file: the local half still answers
        local_only = pipeline.run({"web": {"query": query}, "embedder": {"text": query}})["joiner"]["documents"]
    kinds = [d.meta["retrieval_type"] for d in docs]
    assert len(docs) == 8
    assert set(kinds) == {"web", "dense"}
    assert [d.meta["retrieval_type"] for d in local_only] == ["dense"] * 5
