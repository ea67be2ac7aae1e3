"""Milvus faults: each is one line that names the collection or URI and the setting to change, and loses nothing.

Unreachable or silent servers fail within the timeout (never hang), a missing collection or one built with
another dimension, metric or field names is refused before anything is written, a Milvus Lite database open in
another process is named with its path, a refused token names MILVUS_TOKEN (never its value), and a server that
goes away, restarts or drops an idle connection costs no data and needs no reload by the user.
"""

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from haystack.utils import Secret

from components.retrievers.milvus import MilvusBM25Retriever, MilvusEmbeddingRetriever, MilvusHybridRetriever
from components.stores.milvus import MilvusCollectionError, MilvusConnectionError, MilvusDocumentStore
from tests.support import milvus as milvus_support
from tests.support.milvus import MilvusServer, authenticating_milvus, corpus, ids, is_server
from tests.support.paths import REPO

milvus_server = milvus_support.milvus_server
milvus_servers = milvus_support.milvus_servers
milvus_uri = milvus_support.milvus_uri
milvus_collection = milvus_support.milvus_collection

DOCS = corpus(12)
QUERY = DOCS[3].embedding


def one_line(error: pytest.ExceptionInfo[Exception]) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A port that accepts TCP connections and never answers (a hung server, or a black hole behind a proxy)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for connection in held:
        connection.close()


@pytest.fixture
def written(milvus_uri: str, milvus_collection: str) -> Iterator[Callable[..., MilvusDocumentStore]]:
    """DOCS written to this test's collection; the factory opens more stores on it (all closed at the end)."""
    stores: list[MilvusDocumentStore] = []

    def open_store(**settings: Any) -> MilvusDocumentStore:
        stores.append(MilvusDocumentStore(**{"uri": milvus_uri, "collection_name": milvus_collection, **settings}))
        return stores[-1]

    open_store().write_documents(DOCS)
    yield open_store
    for store in stores:
        store.close()


def assert_intact(store: MilvusDocumentStore) -> None:
    """Everything written is still there, and searchable."""
    assert store.count_documents() == len(DOCS)
    assert sorted(ids(store.filter_documents())) == ids(DOCS)
    assert store.embedding_search([QUERY], 1)[0][0].id == DOCS[3].id
    assert store.bm25_search([DOCS[5].content], 1)[0]


@pytest.mark.timeout(60)
def test_closed_port_fails_at_once_naming_the_uri() -> None:
    uri = f"http://127.0.0.1:{closed_port()}"
    store = MilvusDocumentStore(uri=uri, timeout=2)
    started = time.monotonic()
    with pytest.raises(MilvusConnectionError) as error:
        MilvusEmbeddingRetriever(store).run(query_embedding=QUERY)
    assert time.monotonic() - started < 6
    assert f"cannot reach Milvus at {uri} within 2 s" in one_line(error)
    assert "set uri to a running one" in str(error.value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("address", ["10.255.255.1:19530", "silent"])
def test_unroutable_or_silent_address_fails_within_the_timeout(address: str, silent_listener: int) -> None:
    uri = f"http://127.0.0.1:{silent_listener}" if address == "silent" else f"http://{address}"
    started = time.monotonic()
    with pytest.raises(MilvusConnectionError) as error:
        MilvusDocumentStore(uri=uri, timeout=2).count_documents()
    assert time.monotonic() - started < 8
    message = one_line(error)
    assert uri in message
    assert "set uri" in message


def test_missing_collection_on_search(written: Callable[..., MilvusDocumentStore]) -> None:
    store = written(collection_name="never_written")
    where = f"Milvus collection 'never_written' at {store.settings.uri} does not exist"
    runs = [
        lambda: MilvusEmbeddingRetriever(store).run(query_embedding=QUERY),
        lambda: MilvusBM25Retriever(store).run(query="alpha"),
        lambda: MilvusHybridRetriever(store).run(query="alpha", query_embedding=QUERY),
    ]
    for run in runs:
        with pytest.raises(MilvusCollectionError) as error:
            run()
        assert where in one_line(error)
        assert "set collection_name/uri" in str(error.value)
    assert store.count_documents() == 0
    assert not store.client.has_collection("never_written")  # a search creates nothing
    assert_intact(written())


MISMATCHES = {
    "dimension": ({}, "holds 16-dimensional vectors, these are 4-dimensional"),
    "metric": ({"metric_type": "L2"}, "is indexed with metric IP, not L2: set metric_type=IP"),
    "text field": (
        {"text_field_name": "text"},
        "has no VARCHAR field 'text' (its fields: id, contents, vector, sparse)",
    ),
    "vector field": ({"vector_field_name": "embedding"}, "has no FLOAT_VECTOR field 'embedding'"),
    "id field": ({"id_field_name": "doc_id"}, "has no VARCHAR field 'doc_id'"),
    "sparse field": ({"sparse_field_name": "bm25"}, "has no SPARSE_FLOAT_VECTOR field 'bm25'"),
}


@pytest.mark.parametrize("mismatch", MISMATCHES)
def test_existing_collection_built_otherwise(written: Callable[..., MilvusDocumentStore], mismatch: str) -> None:
    settings, expected = MISMATCHES[mismatch]
    store = written(**settings)
    document = Document(id="new", content="new", embedding=[0.5] * (4 if mismatch == "dimension" else 16))
    with pytest.raises(MilvusCollectionError) as error:
        store.write_documents([document])
    message = one_line(error)
    assert f"Milvus collection '{store.settings.collection_name}' at {store.settings.uri}" in message
    assert expected in message
    assert "use another collection_name" in message
    if mismatch != "dimension":  # the settings themselves are refused on any use, not only on a write
        with pytest.raises(MilvusCollectionError, match="use another collection_name"):
            store.count_documents()
    assert_intact(written())


def test_bm25_on_a_store_without_bm25(written: Callable[..., MilvusDocumentStore]) -> None:
    with pytest.raises(MilvusCollectionError) as error:
        MilvusBM25Retriever(written(bm25=False)).run(query="alpha")
    assert "BM25 search needs bm25=True" in one_line(error)
    assert_intact(written())


HOLD = """
import sys
from pymilvus import MilvusClient
client = MilvusClient(uri=sys.argv[1])
print("open", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@pytest.mark.timeout(120)
def test_lite_database_open_in_another_process(tmp_path: Path) -> None:
    uri = str(tmp_path / "m.db")
    first = MilvusDocumentStore(uri=uri)
    first.write_documents(DOCS)
    first.close()  # releases the database: the other process can take it
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, uri], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "open"
        started = time.monotonic()
        with pytest.raises(MilvusConnectionError) as error:
            MilvusDocumentStore(uri=uri).count_documents()
        assert time.monotonic() - started < 10
        message = one_line(error)
        assert (
            f"Milvus Lite database {uri} is open in another process (Milvus Lite locks its data directory)" in message
        )
        assert f"milvus-lite server --data-dir {uri}" in message
    finally:
        holder.communicate(input="", timeout=60)
    reopened = MilvusDocumentStore(uri=uri)
    assert_intact(reopened)
    reopened.close()


def test_milvus_lite_server_does_not_check_tokens(milvus_server: MilvusServer, milvus_collection: str) -> None:
    """What `milvus-lite server` does with a token: nothing (so a wrong token is tested with the stand-in below)."""
    store = MilvusDocumentStore(
        uri=milvus_server.uri, collection_name=milvus_collection, token=Secret.from_token("x:y")
    )
    store.write_documents(DOCS)
    assert_intact(store)
    store.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("token", ["root:wrong-password", None])
def test_refused_token_names_the_setting_not_the_value(tmp_path: Path, token: str | None) -> None:
    with authenticating_milvus(tmp_path / "data", "root:Milvus") as uri:
        good = MilvusDocumentStore(uri=uri, token=Secret.from_token("root:Milvus"), timeout=3)
        good.write_documents(DOCS)
        secret = Secret.from_token(token) if token else None
        started = time.monotonic()
        with pytest.raises(MilvusConnectionError) as error:
            MilvusDocumentStore(uri=uri, token=secret, timeout=3).count_documents()
        assert time.monotonic() - started < 8
        message = one_line(error)
        assert f"Milvus at {uri} refused the credentials: set token (MILVUS_TOKEN)" in message
        assert "wrong-password" not in message
        assert_intact(good)
        good.close()


@pytest.mark.timeout(120)
def test_server_gone_then_back(milvus_servers: Callable[[], MilvusServer]) -> None:
    server = milvus_servers()
    store = MilvusDocumentStore(uri=server.uri, collection_name="kept", timeout=3)
    store.write_documents(DOCS)
    server.stop()
    for call in (store.count_documents, lambda: store.embedding_search([QUERY], 3), store.filter_documents):
        started = time.monotonic()
        with pytest.raises(MilvusConnectionError) as error:
            call()
        assert time.monotonic() - started < 8
        assert f"lost the connection to Milvus at {server.uri}" in one_line(error)
    server.start()  # same data directory and port; every collection comes back released
    assert_intact(store)  # the same store object: it reconnects and loads the collection itself
    store.close()


@pytest.mark.timeout(180)
def test_idle_connections_survive(milvus_servers: Callable[[], MilvusServer], tmp_path: Path) -> None:
    """milvus-lite's gRPC server sends GOAWAY "too_many_pings" to clients idle ~30 s (pymilvus pings every 10 s)."""
    uris = [milvus_servers().uri, str(tmp_path / "m.db")]
    stores = [MilvusDocumentStore(uri=uri, collection_name="idle") for uri in uris]
    for store in stores:
        store.write_documents(DOCS)
    time.sleep(38)  # GOAWAY comes after the third idle ping, ~30 s
    for uri in uris:
        fresh = MilvusDocumentStore(uri=uri, collection_name="idle")  # shares pymilvus's connection to uri
        assert_intact(fresh)
        fresh.close()
    for store in stores:
        assert_intact(store)
        store.close()
    assert is_server(uris[0])
