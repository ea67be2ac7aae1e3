"""Every outbound client keeps to its ``timeout`` through retries, and owns every answer it cannot use.

The clients (the OpenAI-compatible embedder, the TEI ranker, the remote retriever, the Exa, Tavily and ZhipuAI web
searches) are pointed at the misbehaving server of ``tests/support/servers/misbehaving.py``. Two promises a user
relies on:

* ``timeout`` bounds a request with all its retries and every wait between them: a server answering 429 (or 503)
  with ``Retry-After: 60`` for ever ends the call within ``timeout`` plus slack (it used to take minutes);
* a redirect, an answer whose ``Content-Encoding`` cannot be decoded, one of the wrong shape, cut short or not JSON
  is the component's own error in one line (``WebSearchError``, ``RerankServerError``, ``RemoteSearchError``,
  ``OpenAIEmbeddingError``), never an ``httpx``, ``zlib`` or ``AttributeError`` escaping an SDK, never retried; a
  redirect is not followed (the key is never sent where the server points); web search with ``on_error="empty"``
  returns no Documents instead.
"""

import time
from collections.abc import Iterator
from typing import Any

import pytest
from haystack import Document
from haystack.utils import Secret

from components.embedders import OpenAIEmbeddingError
from components.embedders.openai_text_embedder import OpenAITextEmbedder
from components.rankers.rerank_protocol import RerankServerError
from components.rankers.tei_ranker import TEIRanker
from components.retrievers.remote import UltraRAGRemoteRetriever
from components.retrievers.remote.deploy_client import RemoteSearchError
from components.websearch import ExaWebSearch, TavilyWebSearch, WebSearchError, ZhipuAIWebSearch
from tests.support.servers.misbehaving import State, serve

TIMEOUT = 3.0
SLACK = 5.0  # a loaded 2-core machine; an unbounded call waits 60 s per retry
WEB = {"exa": ExaWebSearch, "tavily": TavilyWebSearch, "zhipuai": ZhipuAIWebSearch}
CLIENTS = ("openai", "tei", "remote", *WEB)
ERRORS: dict[str, type[Exception]] = {
    "openai": OpenAIEmbeddingError,
    "tei": RerankServerError,
    "remote": RemoteSearchError,
    **dict.fromkeys(WEB, WebSearchError),
}
KEYS = {"openai": "data", "tei": "results", "remote": "ret_psg", "exa": "results", "tavily": "results"}
KEYS["zhipuai"] = "search_result"
FORMAT = {
    "openai": "OpenAI embeddings",
    "tei": "TEI rerank",
    "remote": "UltraRAG deploy",
    "exa": "Exa",
    "tavily": "Tavily",
    "zhipuai": "ZhipuAI",
}
REDIRECTS = (301, 302, 303, 307, 308)
ENCODINGS = ("br-garbage", "gzip-garbage")
SHAPES = ("key-number", "empty-list", "key-strings", "truncated-json", "text-plain")


@pytest.fixture
def server() -> Iterator[tuple[str, State]]:
    with serve() as running:
        yield running


def client(name: str, url: str, **options: Any) -> tuple[Any, dict[str, Any]]:
    """The component NAME pointed at URL (several retries allowed), and the inputs of one call."""
    key = Secret.from_token("secret-key")
    if name == "openai":
        settings = {"timeout": TIMEOUT, "max_retries": 3, "backoff": 0.01, **options}
        return OpenAITextEmbedder(base_url=f"{url}/v1", api_key=key, model_name="m", **settings), {"text": "q"}
    if name == "tei":
        ranker = TEIRanker(f"{url}/rerank", api_key=key, **{"timeout": TIMEOUT, "max_retries": 3, **options})
        return ranker, {"query": "q", "documents": [Document(content="a")]}
    if name == "remote":
        settings = {"timeout": TIMEOUT, "retries": 3, **options}
        return UltraRAGRemoteRetriever(retriever_url=url, **settings), {"query": "q"}
    settings = {"timeout": TIMEOUT, "retries": 3, "base_delay": 0.01, **options}
    return WEB[name](base_url=url, api_key=key, **settings), {"query": "q"}


def answer_with(state: State, name: str, bad: str | int) -> None:
    """Set the server to answer as BAD says, with NAME's protocol key where the shape needs one."""
    key = KEYS[name]
    shapes = {"key-number": {key: 5}, "empty-list": [], "key-strings": {key: ["a"]}}
    if bad in shapes:
        state.mode, state.body = "json", shapes[bad]
    elif isinstance(bad, int):
        state.mode, state.status = "redirect", bad
    else:
        state.mode, state.body = bad, {key: [{"text": "a"}]}


def run(component: Any, inputs: dict[str, Any]) -> Any:
    return component.run(**inputs)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", CLIENTS)
def test_a_429_storm_with_retry_after_ends_within_the_timeout(server: tuple[str, State], name: str) -> None:
    url, state = server
    state.mode, state.status = "retry-after", 503 if name == "remote" else 429  # the remote retries 5xx only
    options = {"base_delay": 20.0} if name in ("remote", *WEB) else {}  # they wait 20 + 40 + 80 s unbounded
    component, inputs = client(name, url, **options)
    started = time.monotonic()
    with pytest.raises(ERRORS[name], match=f"HTTP {state.status}") as error:
        run(component, inputs)
    assert time.monotonic() - started < TIMEOUT + SLACK
    assert "timeout" in str(error.value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", WEB)
def test_on_error_empty_gives_no_documents_within_the_timeout_in_a_429_storm(
    server: tuple[str, State], name: str
) -> None:
    url, state = server
    state.mode, state.status = "retry-after", 429
    component, inputs = client(name, url, base_delay=20.0, on_error="empty")
    started = time.monotonic()
    assert run(component, inputs) == {"documents": []}
    assert time.monotonic() - started < TIMEOUT + SLACK


@pytest.mark.timeout(30)
@pytest.mark.parametrize("status", REDIRECTS)
@pytest.mark.parametrize("name", CLIENTS)
def test_a_redirect_is_not_followed_and_is_the_components_own_error(
    server: tuple[str, State], name: str, status: int
) -> None:
    url, state = server
    answer_with(state, name, status)
    component, inputs = client(name, url)
    with pytest.raises(ERRORS[name]) as error:
        run(component, inputs)
    said = str(error.value)
    assert f"HTTP {status}" in said
    assert f"redirect to {url}/elsewhere is not followed" in said
    assert "\n" not in said
    assert state.paths == [state.paths[0]]  # one request, none to /elsewhere, no retry


@pytest.mark.timeout(30)
@pytest.mark.parametrize("bad", ENCODINGS)
@pytest.mark.parametrize("name", CLIENTS)
def test_an_answer_that_cannot_be_decoded_is_the_components_own_error(
    server: tuple[str, State], name: str, bad: str
) -> None:
    url, state = server
    answer_with(state, name, bad)
    component, inputs = client(name, url)
    with pytest.raises(ERRORS[name], match="could not decode the answer") as error:
        run(component, inputs)
    assert "\n" not in str(error.value)
    assert state.requests == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize("bad", SHAPES)
@pytest.mark.parametrize("name", CLIENTS)
def test_an_answer_of_the_wrong_shape_is_the_components_own_error(
    server: tuple[str, State], name: str, bad: str
) -> None:
    url, state = server
    answer_with(state, name, bad)
    component, inputs = client(name, url)
    with pytest.raises(ERRORS[name], match=f"answer is not the {FORMAT[name]} format: ") as error:
        run(component, inputs)
    said = str(error.value)
    assert "\n" not in said
    assert "AttributeError" not in said
    assert "TypeError" not in said
    assert state.requests == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bad", [*REDIRECTS, *ENCODINGS, *SHAPES])
@pytest.mark.parametrize("name", WEB)
async def test_on_error_empty_turns_every_unusable_answer_into_no_documents(
    server: tuple[str, State], name: str, bad: str | int
) -> None:
    url, state = server
    answer_with(state, name, bad)
    component, inputs = client(name, url, on_error="empty")
    assert component.run(**inputs) == {"documents": []}
    assert await component.run_async(**inputs) == {"documents": []}
    assert not [path for path in state.paths if path == "/elsewhere"]
