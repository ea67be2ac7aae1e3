"""Every outbound call ends within its deadline and reads at most its size limit; a bad answer is the component's error.

A local server (``tests/support/servers/misbehaving.py``) dribbles one byte a second (the body, or the headers),
streams 300 MB (with or without a declared length, or as a gzip bomb), or answers with JSON nested 100,000 deep, an
HTML page, or JSON of a shape no client expects. Each client type — the three web search providers (``run`` and
``run_async``), the remote retriever, the OpenAI-compatible embedder, the TEI ranker — must end with its own error
type (or no Documents with ``on_error="empty"``): the dribbles within the deadline plus slack, the large bodies
without being read whole, and never a raw ``RecursionError``, ``ValueError``, ``AttributeError`` or
``JSONDecodeError`` from inside an SDK.
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
from components.retrievers.remote import UltraRAGRemoteRetriever, deploy_client
from components.retrievers.remote.deploy_client import RemoteSearchError
from components.websearch import (
    ExaBatchWebSearch,
    ExaWebSearch,
    TavilyBatchWebSearch,
    TavilyWebSearch,
    WebSearchError,
    ZhipuAIBatchWebSearch,
    ZhipuAIWebSearch,
)
from tests.support.servers.misbehaving import HUGE_BYTES, State, serve

DEADLINE = 2.0  # twice the dribble's gap between bytes: a per-read timeout of this length never fires
SLACK = 4.0  # a loaded 2-core machine; calls that are not bounded run past the tests' 30 s timeout
MiB = 1024 * 1024
PROVIDERS = ("exa", "tavily", "zhipuai")
SINGLE = {"exa": ExaWebSearch, "tavily": TavilyWebSearch, "zhipuai": ZhipuAIWebSearch}
BATCH = {"exa": ExaBatchWebSearch, "tavily": TavilyBatchWebSearch, "zhipuai": ZhipuAIBatchWebSearch}
RESULTS = {"exa": "results", "tavily": "results", "zhipuai": "search_result"}
DRIBBLES = ("dribble", "dribble-headers")
HUGE = ("huge", "huge-declared", "gzip-bomb")
MODES = ("sync", "async")


def shapes(key: str) -> dict[str, Any]:
    """200 answers a client cannot read, by label: JSON of other shapes than the protocol's ``{key: [...]}``."""
    return {"list": [1, 2], "string": "text", "null": None, "key-number": {key: 5}, "key-items": {key: [1, "x"]}}


UNREADABLE = ("deep", "not-json", *shapes("results"))


@pytest.fixture
def server() -> Iterator[tuple[str, State]]:
    with serve() as running:
        yield running


def answer_with(state: State, behaviour: str, key: str = "results") -> None:
    """Set the server to BEHAVIOUR: a mode, or a label of ``shapes`` (its list under KEY)."""
    if behaviour in shapes(key):
        state.mode, state.body = "json", shapes(key)[behaviour]
    else:
        state.mode = behaviour


async def call(component: Any, mode: str, **inputs: Any) -> Any:
    """``run`` or ``run_async`` of COMPONENT."""
    return await component.run_async(**inputs) if mode == "async" else component.run(**inputs)


def web(provider: str, url: str, *, batch: bool = False, **options: Any) -> Any:
    """The provider's component pointed at the server, one attempt within DEADLINE unless told otherwise."""
    settings = {"api_key": Secret.from_token("test-key"), "timeout": DEADLINE, "retries": 0, "base_delay": 0.01}
    return (BATCH if batch else SINGLE)[provider](base_url=url, **{**settings, **options})


@pytest.mark.timeout(30)
@pytest.mark.parametrize("behaviour", DRIBBLES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_web_search_against_a_dribbling_server_ends_within_the_deadline(
    server: tuple[str, State], provider: str, mode: str, behaviour: str
) -> None:
    url, state = server
    state.mode = behaviour
    started = time.monotonic()
    with pytest.raises(WebSearchError, match=r"\(1 attempt\(s\)\): no answer within the timeout of 2 s") as error:
        await call(web(provider, url), mode, query="q")
    assert time.monotonic() - started < DEADLINE + SLACK
    assert error.value.status is None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behaviour", HUGE)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_web_search_refuses_a_huge_answer_without_reading_it(
    server: tuple[str, State], provider: str, mode: str, behaviour: str
) -> None:
    url, state = server
    state.mode = behaviour
    with pytest.raises(WebSearchError, match=r"not retried\): HTTP 200: the answer is longer than the limit of 67,1"):
        await call(web(provider, url, retries=2), mode, query="q")
    assert state.requests == 1
    assert state.sent < HUGE_BYTES // 3  # the limit (64 MiB) and what the sockets buffered, not 300 MB


@pytest.mark.timeout(30)
@pytest.mark.parametrize("behaviour", UNREADABLE)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_web_search_reports_an_unreadable_answer_as_its_own_error(
    server: tuple[str, State], provider: str, mode: str, behaviour: str
) -> None:
    url, state = server
    answer_with(state, behaviour, RESULTS[provider])
    with pytest.raises(WebSearchError, match=r"'q' failed \(1 attempt\(s\), not retried\): HTTP 200: ") as error:
        await call(web(provider, url, retries=2), mode, query="q")
    assert error.value.status == 200
    assert state.requests == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behaviour", ["dribble", "huge", *UNREADABLE])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_on_error_empty_turns_every_bad_answer_into_no_documents(
    server: tuple[str, State], provider: str, behaviour: str
) -> None:
    url, state = server
    answer_with(state, behaviour, RESULTS[provider])
    search = web(provider, url, batch=True, on_error="empty", retrieve_thread_num=2)
    assert search.run(queries=["a", "b"]) == {"documents": [[], []]}
    assert await search.run_async(queries=["c"]) == {"documents": [[]]}
    assert state.sent < state.requests * HUGE_BYTES // 3  # a huge answer was not read whole


@pytest.mark.parametrize("mode", MODES)
async def test_a_compressed_answer_within_the_limit_is_read_as_usual(server: tuple[str, State], mode: str) -> None:
    url, state = server
    state.mode = "gzip-json"
    state.body = {"search_result": [{"title": "t", "content": "Passage about zip.", "link": "https://example.com"}]}
    found = (await call(web("zhipuai", url), mode, query="zip"))["documents"]
    assert [(doc.content, doc.meta["url"]) for doc in found] == [("Passage about zip.", "https://example.com")]
    state.body = {"ret_psg": [["one", "two"]]}
    assert [doc.content for doc in (await call(remote(url), mode, query="zip"))["documents"]] == ["one", "two"]


def remote(url: str) -> UltraRAGRemoteRetriever:
    return UltraRAGRemoteRetriever(retriever_url=url, timeout=DEADLINE, retries=0)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("behaviour", DRIBBLES)
@pytest.mark.parametrize("mode", MODES)
async def test_remote_retriever_against_a_dribbling_server_ends_within_the_deadline(
    server: tuple[str, State], mode: str, behaviour: str
) -> None:
    url, state = server
    state.mode = behaviour
    started = time.monotonic()
    with pytest.raises(RemoteSearchError, match=r"after 1 attempt: ReadTimeout") as error:
        await call(remote(url), mode, query="q")
    assert time.monotonic() - started < DEADLINE + SLACK
    assert error.value.status is None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behaviour", HUGE)
async def test_remote_retriever_refuses_a_huge_answer_without_reading_it(
    server: tuple[str, State], behaviour: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deploy_client, "MAX_ANSWER_BYTES", 8 * MiB)  # the mechanism of the 128 MiB default
    url, state = server
    state.mode = behaviour
    retriever = UltraRAGRemoteRetriever(retriever_url=url, timeout=30, retries=2)
    with pytest.raises(RemoteSearchError, match=r"the limit is 8,388,608 bytes") as error:
        retriever.run(query="q")
    assert error.value.status == 200
    assert state.requests == 1
    assert state.sent < HUGE_BYTES // 3


@pytest.mark.timeout(30)
@pytest.mark.parametrize("behaviour", UNREADABLE)
@pytest.mark.parametrize("mode", MODES)
async def test_remote_retriever_reports_an_unreadable_answer_as_its_own_error(
    server: tuple[str, State], mode: str, behaviour: str
) -> None:
    url, state = server
    answer_with(state, behaviour, "ret_psg")
    with pytest.raises(RemoteSearchError, match=r"answered") as error:
        await call(remote(url), mode, query="q")
    assert error.value.status == 200


def embedder(url: str, **options: Any) -> OpenAITextEmbedder:
    settings = {"timeout": DEADLINE, "max_retries": 0, "backoff": 0.01, **options}
    return OpenAITextEmbedder(base_url=f"{url}/v1", api_key=Secret.from_token("test-key"), model_name="m", **settings)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("behaviour", DRIBBLES)
@pytest.mark.parametrize("mode", MODES)
async def test_openai_embedder_against_a_dribbling_server_ends_within_the_deadline(
    server: tuple[str, State], mode: str, behaviour: str
) -> None:
    url, state = server
    state.mode = behaviour
    started = time.monotonic()
    with pytest.raises(OpenAIEmbeddingError, match=r"did not answer a request of 1 text\(s\) in time \(1 attempt"):
        await call(embedder(url), mode, text="q")
    assert time.monotonic() - started < DEADLINE + SLACK


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behaviour", HUGE)
@pytest.mark.parametrize("mode", MODES)
async def test_openai_embedder_refuses_a_huge_answer_without_reading_it(
    server: tuple[str, State], mode: str, behaviour: str
) -> None:
    url, state = server
    state.mode = behaviour
    limit = f"{MiB + 32 * 128 * 1024:,}"  # 1 MiB + 128 KiB for each of the 32 texts a request may hold
    with pytest.raises(OpenAIEmbeddingError, match=rf"with more than {limit} bytes \(HTTP 200, not retried") as error:
        await call(embedder(url, timeout=30, max_retries=2), mode, text="q")
    assert error.value.status == 200
    assert state.requests == 1
    assert state.sent < HUGE_BYTES // 3


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("behaviour", "status", "message"),
    [
        ("deep", 200, "not the OpenAI embeddings format: JSON nested too deeply to read"),
        ("deep", 500, r"answered HTTP 500 to a request of 1 text\(s\)"),
        ("not-json", 200, "not the OpenAI embeddings format: not JSON"),
        ("list", 200, "not the OpenAI embeddings format: no 'data' list"),
        ("null", 200, "not the OpenAI embeddings format: no .data. list"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
async def test_openai_embedder_reports_an_unreadable_answer_as_its_own_error(
    server: tuple[str, State], mode: str, behaviour: str, status: int, message: str
) -> None:
    url, state = server
    answer_with(state, behaviour, "data")
    state.status = status
    with pytest.raises(OpenAIEmbeddingError, match=message) as error:
        await call(embedder(url), mode, text="q")
    assert error.value.status == status


def ranker(url: str, **options: Any) -> TEIRanker:
    return TEIRanker(f"{url}/rerank", api_key=None, **{"timeout": DEADLINE, "max_retries": 0, **options})


@pytest.mark.timeout(30)
@pytest.mark.parametrize("behaviour", DRIBBLES)
@pytest.mark.parametrize("mode", MODES)
async def test_tei_ranker_against_a_dribbling_server_ends_within_the_deadline(
    server: tuple[str, State], mode: str, behaviour: str
) -> None:
    url, state = server
    state.mode = behaviour
    started = time.monotonic()
    with pytest.raises(RerankServerError, match=r"after 1 attempt\(s\): ReadTimeout"):
        await call(ranker(url), mode, query="q", documents=[Document(content="a")])
    assert time.monotonic() - started < DEADLINE + SLACK


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behaviour", HUGE)
async def test_tei_ranker_refuses_a_huge_answer_without_reading_it(server: tuple[str, State], behaviour: str) -> None:
    url, state = server
    state.mode = behaviour
    with pytest.raises(RerankServerError, match=r"sent too much: .*the limit is 16,777,216 bytes") as error:
        ranker(url, timeout=30, max_retries=2).run(query="q", documents=[Document(content="a")])
    assert error.value.status == 200
    assert state.requests == 1
    assert state.sent < HUGE_BYTES // 3


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("behaviour", "status", "message"),
    [
        ("deep", 200, "not the TEI rerank format: JSON nested too deeply to read"),
        ("deep", 500, "answered HTTP 500 to a request of 1 texts"),
        ("string", 200, "not the TEI rerank format: expected a JSON array"),
        ("key-items", 200, "not the TEI rerank format: expected a JSON array"),
    ],
)
async def test_tei_ranker_reports_an_unreadable_answer_as_its_own_error(
    server: tuple[str, State], behaviour: str, status: int, message: str
) -> None:
    url, state = server
    answer_with(state, behaviour)
    state.status = status
    with pytest.raises(RerankServerError, match=message) as error:
        await ranker(url).run_async(query="q", documents=[Document(content="a")])
    assert error.value.status == status
