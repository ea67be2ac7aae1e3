"""The TEI sparse embedders against a local server speaking TEI's /embed_sparse protocol."""

import importlib
import inspect
from collections.abc import Iterator

import pytest
from haystack import Document, Pipeline
from haystack.dataclasses import SparseEmbedding

from components.embedders.embedder_roles import SPARSE_CLASSES, EmbedderRole, sparse_embedder_type
from components.embedders.tei_sparse_batch_text_embedder import TEISparseBatchTextEmbedder
from components.embedders.tei_sparse_common import TEISparseError
from components.embedders.tei_sparse_document_embedder import TEISparseDocumentEmbedder
from components.embedders.tei_sparse_text_embedder import TEISparseTextEmbedder
from components.retrievers.sparse.retriever import SparseEmbeddingRetriever
from components.stores.sparse.document_store import SparseDocumentStore
from tests.support.serve import free_port
from tests.support.servers.tei_sparse import TEISparseServer, sparse_entries


@pytest.fixture
def server() -> Iterator[TEISparseServer]:
    """A fresh server on a free port."""
    with TEISparseServer(max_client_batch_size=4) as running:
        yield running


def expected(text: str) -> SparseEmbedding:
    """The server's vector for TEXT."""
    entries = sparse_entries(text)
    return SparseEmbedding([e["index"] for e in entries], [e["value"] for e in entries])


def test_documents_are_sent_in_batches_under_the_server_limit(server: TEISparseServer) -> None:
    """Ten documents, batch_size 4: three requests (4, 4, 2), every vector the server's, in order."""
    documents = [Document(content=f"passage number {i} about topic {i % 3}") for i in range(10)]
    out = TEISparseDocumentEmbedder(url=server.url, batch_size=4).run(documents=documents)["documents"]
    assert server.requests == [4, 4, 2]
    assert [d.sparse_embedding for d in out] == [expected(d.content) for d in documents]


def test_a_server_limit_exceeded_is_reported_with_teis_message(server: TEISparseServer) -> None:
    """batch_size above --max-client-batch-size: TEI's 413 and its message, naming the URL; no retry."""
    with pytest.raises(TEISparseError, match=r"/embed_sparse answered HTTP 413 .*maximum allowed batch size 4"):
        TEISparseBatchTextEmbedder(url=server.url, batch_size=8).run(texts=[f"q{i}" for i in range(6)])
    assert server.requests == [6]


def test_overload_is_retried_and_a_non_splade_model_is_not(server: TEISparseServer) -> None:
    """429 is retried (then succeeds); 424 (the model is not a SPLADE model) fails at once with TEI's words."""
    server.faults[:] = [(429, "overloaded")]
    embedder = TEISparseTextEmbedder(url=server.url, backoff=0.01, query_instruction="query: ")
    assert embedder.run(text="vitamin c")["sparse_embedding"] == expected("query: vitamin c")
    server.faults[:] = [(424, "backend")]
    with pytest.raises(TEISparseError, match=r"HTTP 424 .*injected backend \(backend\)"):
        embedder.run(text="vitamin c")
    assert server.requests == [1, 1, 1]


def test_a_loading_server_is_tried_max_retries_more_times_then_named(server: TEISparseServer) -> None:
    """503 on every attempt: 1 + max_retries requests, then TEI's message and the attempt count, no vector."""
    server.faults[:] = [(503, "unhealthy")] * 4
    embedder = TEISparseTextEmbedder(url=server.url, max_retries=2, backoff=0.01)
    with pytest.raises(TEISparseError, match=r"/embed_sparse answered HTTP 503 .*\(attempt 3\): injected unhealthy"):
        embedder.run(text="vitamin c")
    assert server.requests == [1, 1, 1]


def test_an_unreachable_server_is_retried_then_named() -> None:
    """Nothing listening: max_retries more connection attempts, then an error naming the URL and the last one."""
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(TEISparseError, match=rf"could not reach {url}/embed_sparse \(attempt 2\): ConnectError"):
        TEISparseTextEmbedder(url=url, max_retries=1, backoff=0.01).run(text="vitamin c")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([[{"index": 1, "value": 1.0}]] * 2, r"expected a list of 1 vectors, got list of 2"),
        ([[{"index": -3, "value": 1.0}]], r"without a term id in \[0, 2147483647\)"),
        ([[{"index": 2**40, "value": 1.0}]], r"without a term id in \[0, 2147483647\)"),  # the store keeps int32
        ([[{"index": i, "value": 1.0} for i in range(65_537)]], r"has 65537 terms, more than the 65536"),
        ([[{"index": 3, "value": "high"}]], r"without a finite value"),
        ([[{"index": 3, "value": 1.0}, {"index": 3, "value": 2.0}]], r"lists a term id twice"),
        ({"embeddings": []}, r"expected a list of 1 vectors, got dict"),
    ],
)
def test_answers_outside_teis_format_are_refused(server: TEISparseServer, answer: object, message: str) -> None:
    """An answer TEI never sends is an error naming the URL and what is wrong, never a wrong vector."""
    server.malformed = answer
    with pytest.raises(TEISparseError, match=rf"answered HTTP 200, but not in TEI's /embed_sparse format: .*{message}"):
        TEISparseTextEmbedder(url=server.url).run(text="anything")


def test_bad_options_are_refused_at_init() -> None:
    """Each bad option is a ValueError naming it and its range."""
    with pytest.raises(ValueError, match="url must be an http"):
        TEISparseTextEmbedder(url="localhost:8080")
    with pytest.raises(ValueError, match="batch_size"):
        TEISparseDocumentEmbedder(url="http://127.0.0.1:1", batch_size=0)


def test_indexing_and_search_through_yaml_pipelines(server: TEISparseServer, tmp_path) -> None:
    """Documents embedded by TEI, written to a sparse store, searched with a TEI query: the matching one first,
    with the pipeline round-tripped through YAML."""
    store = SparseDocumentStore(path=str(tmp_path / "sparse"))
    documents = [Document(id=str(i), content=t) for i, t in enumerate(["scurvy and vitamin c", "coffee", "moon"])]
    store.write_documents(TEISparseDocumentEmbedder(url=server.url).run(documents=documents)["documents"])
    search = Pipeline()
    search.add_component("embed", TEISparseTextEmbedder(url=server.url))
    search.add_component("retrieve", SparseEmbeddingRetriever(store, top_k=2))
    search.connect("embed.sparse_embedding", "retrieve.query_sparse_embedding")
    loaded = Pipeline.loads(search.dumps())
    hits = loaded.run({"embed": {"text": "what is scurvy?"}})["retrieve"]["documents"]
    assert [d.id for d in hits] == ["0"]


def test_the_sparse_registry_names_every_backends_three_embedders() -> None:
    """Each registered sparse type imports, and takes what its role takes: documents, one text, or texts."""
    takes = {EmbedderRole.DOCUMENT: "documents", EmbedderRole.QUERY: "text", EmbedderRole.QUERY_BATCH: "texts"}
    for backend in SPARSE_CLASSES:
        for role, parameter in takes.items():
            module, name = sparse_embedder_type(backend, role).rsplit(".", 1)
            run = getattr(importlib.import_module(module), name).run
            assert parameter in inspect.signature(run).parameters, (backend, role)
