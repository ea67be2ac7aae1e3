"""The remote retrievers against a real `needle serve`: the same documents as the local search, in order; clear
errors with the server's status and body; retries and time-outs bounded."""

import asyncio
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from haystack import Pipeline

from components.retrievers.remote import UltraRAGRemoteBatchRetriever, UltraRAGRemoteRetriever
from components.retrievers.remote.deploy_client import RemoteSearchError, search_url
from needle_retrieval.search.searcher import Searcher
from tests.support.serve import Server, sample_index, shared_server

pytestmark = pytest.mark.integration
QUERIES = ["parse command line options", "compress data with gzip", "run a function in a separate thread"]


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    return Searcher(sample_index(tmp_path_factory), top_k=4, mode="dense")  # /search answers dense, as UltraRAG


def address(server: Server) -> str:
    return f"{server.host}:{server.port}"  # no scheme: the component adds http:// as the seed does


def test_single_and_batch_return_the_local_documents_in_order(server: Server, local: Searcher) -> None:
    expected = [[doc.content for doc in docs] for docs in local.search(QUERIES)]
    single = UltraRAGRemoteRetriever(retriever_url=address(server), top_k=4)
    for query, contents in zip(QUERIES, expected, strict=True):
        documents = single.run(query=query)["documents"]
        assert [doc.content for doc in documents] == contents
        assert [doc.meta["rank"] for doc in documents] == [1, 2, 3, 4]
    batch = UltraRAGRemoteBatchRetriever(retriever_url=address(server), top_k=4)
    assert [[doc.content for doc in docs] for docs in batch.run(queries=QUERIES)["documents"]] == expected


def test_run_async_and_top_k_at_run_time(server: Server, local: Searcher) -> None:
    retriever = UltraRAGRemoteRetriever(retriever_url=address(server))
    documents = asyncio.run(retriever.run_async(query=QUERIES[1], top_k=2))["documents"]
    assert [doc.content for doc in documents] == [doc.content for doc in local.search(QUERIES[1:2])[0][:2]]


def test_a_yaml_round_trip_keeps_the_settings(server: Server) -> None:
    pipeline = Pipeline()
    pipeline.add_component("remote", UltraRAGRemoteBatchRetriever(retriever_url=address(server), top_k=2, retries=1))
    loaded = Pipeline.loads(pipeline.dumps())
    assert loaded.get_component("remote").to_dict() == pipeline.get_component("remote").to_dict()
    assert len(loaded.run({"remote": {"queries": QUERIES}})["remote"]["documents"][2]) == 2


class RefusingHandler(BaseHTTPRequestHandler):
    """Answers every search as a Milvus `needle serve` answers another collection: 404 with FastAPI's detail."""

    calls = 0

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        RefusingHandler.calls += 1
        body = b"{\"detail\": \"collection_name 'wiki' is not served here; use one of '', 'needle'\"}"
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_refusal_carries_the_servers_status_and_message_and_is_not_retried() -> None:
    refusing = ThreadingHTTPServer(("127.0.0.1", 0), RefusingHandler)
    threading.Thread(target=refusing.serve_forever, daemon=True).start()
    try:
        url = f"127.0.0.1:{refusing.server_address[1]}"
        retriever = UltraRAGRemoteRetriever(retriever_url=url, collection_name="wiki", retries=3, base_delay=5)
        started = time.monotonic()
        with pytest.raises(RemoteSearchError, match=r"HTTP 404.*wiki") as raised:
            retriever.run(query="zip")
        assert raised.value.status == 404
        assert RefusingHandler.calls == 1
        assert time.monotonic() - started < 5  # a 4xx is final: no back-off sleep happened
    finally:
        refusing.shutdown()


class FlakyHandler(BaseHTTPRequestHandler):
    """Answers 503 to the first two requests, then a valid deploy-search answer."""

    calls = 0

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        FlakyHandler.calls += 1
        status, body = (503, b'{"detail": "warming up"}') if FlakyHandler.calls <= 2 else (200, b'{"ret_psg": [["a"]]}')
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_5xx_answers_are_retried_then_reported_with_status_and_body() -> None:
    flaky = ThreadingHTTPServer(("127.0.0.1", 0), FlakyHandler)
    threading.Thread(target=flaky.serve_forever, daemon=True).start()
    try:
        url = f"127.0.0.1:{flaky.server_address[1]}"
        ok = UltraRAGRemoteRetriever(retriever_url=url, retries=2, base_delay=0.01).run(query="zip")["documents"]
        assert [doc.content for doc in ok] == ["a"]
        assert FlakyHandler.calls == 3
        FlakyHandler.calls = 0
        with pytest.raises(RemoteSearchError, match=r"after 2 attempts: HTTP 503.*warming up") as raised:
            UltraRAGRemoteRetriever(retriever_url=url, retries=1, base_delay=0.01).run(query="zip")
        assert raised.value.status == 503
    finally:
        flaky.shutdown()


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as silent:  # accepts connections (backlog) but never reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"127.0.0.1:{silent.getsockname()[1]}"
        retriever = UltraRAGRemoteRetriever(retriever_url=url, timeout=0.5, retries=1, base_delay=0.01)
        # the first attempt uses all of the timeout, which bounds the retries too: no second attempt is made
        said = r"after 1 attempt: ReadTimeout: .*; no retry: .* the timeout of 0.5 s"
        with pytest.raises(RemoteSearchError, match=said) as raised:
            retriever.run(query="zip")
        assert raised.value.status is None


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("127.0.0.1:64501", "http://127.0.0.1:64501/search"),
        ("https://host/api/", "https://host/api/search"),
        ("http://host/search", "http://host/search"),
    ],
)
def test_urls_are_normalised_as_the_seed_does(given: str, url: str) -> None:
    assert search_url(given) == url


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retriever_url": ""}, "retriever_url"),
        ({"retriever_url": "h", "top_k": 0}, "top_k"),
        ({"retriever_url": "h", "timeout": 0}, "timeout"),
        ({"retriever_url": "h", "retries": 11}, "retries"),
        ({"retriever_url": "h", "base_delay": -1}, "base_delay"),
    ],
)
def test_bad_init_parameters_are_refused_by_name(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UltraRAGRemoteRetriever(**kwargs)
