"""`needle serve` answers queries through Hayhooks' registry and run_async, and exposes nothing else.

One real server (a subprocess on a free 127.0.0.1 port) over an index built by `needle index --bm25`: every mode
answers with Hayhooks' ``{"result": {component: {"documents": [...]}}}`` shape; Hayhooks' deploy, undeploy, file,
chat and drawing routes are absent, so a web page cannot deploy a pipeline that runs commands; no CORS header is
sent without ``--cors-origin``; and the index directory is byte-identical after serving.
"""

import json
from pathlib import Path

import pytest

from tests.support.serve import Server, shared_server, tree, tree_before_serving

pytestmark = pytest.mark.integration
ANSWERING = {"dense_search": "retriever", "bm25_search": "retriever", "hybrid_search": "mix", "rrf_search": "joiner"}


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


def evil_yaml(marker: Path) -> str:
    """A BM25 pipeline whose tokenizer would run each query as a shell command (issue 8's attack)."""
    store = {
        "type": "components.stores.bm25.document_store.BM25DocumentStore",
        "init_parameters": {"path": str(marker.parent / "bm25"), "tokenizer": "os:system"},
    }
    pipeline = {
        "components": {
            "retriever": {
                "type": "components.retrievers.bm25.retriever.BM25Retriever",
                "init_parameters": {"document_store": store},
            }
        },
        "connections": [],
        "inputs": {"query": "retriever.query"},
        "outputs": {"documents": "retriever.documents"},
    }
    return json.dumps(pipeline)  # JSON is YAML


@pytest.mark.parametrize("name", sorted(ANSWERING))
def test_each_mode_answers_with_hayhooks_result_shape(server: Server, name: str) -> None:
    answer = server.post_json(f"/{name}/run", {"query": "read and write ZIP files"})
    assert answer.status == 200, answer.body[:500]
    docs = answer.json()["result"][ANSWERING[name]]["documents"]
    assert len(docs) == 5
    assert docs[0]["id"].startswith("zipfile")


@pytest.mark.parametrize("name", sorted(ANSWERING))
def test_request_top_k_sets_the_number_of_hits(server: Server, name: str) -> None:
    answer = server.post_json(f"/{name}/run", {"query": "read and write ZIP files", "top_k": 2})
    assert answer.status == 200, answer.body[:500]
    assert len(answer.json()["result"][ANSWERING[name]]["documents"]) == 2


def test_status_lists_exactly_the_index_pipelines(server: Server) -> None:
    status = server.request("GET", "/status").json()
    assert status["status"] == "Up!"
    assert set(status["pipelines"]) == set(ANSWERING)


def test_openapi_lists_only_query_routes(server: Server) -> None:
    paths = set(server.request("GET", "/openapi.json").json()["paths"])
    query_routes = {"/search"} | {f"/{name}/run" for name in ANSWERING}  # /search: UltraRAG's deploy protocol
    assert paths == {"/status", "/status/{pipeline_name}"} | query_routes  # /mcp (POST only) is not in the schema


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/deploy-yaml"),
        ("POST", "/deploy_files"),
        ("POST", "/undeploy/dense_search"),
        ("POST", "/undeploy/evil"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/chat/completions"),
        ("POST", "/v1/responses"),
        ("POST", "/v1/files"),
        ("GET", "/v1/models"),
        ("GET", "/draw/dense_search"),
        ("PUT", "/dense_search/run"),
        ("DELETE", "/dense_search/run"),
    ],
)
def test_hayhooks_management_routes_are_gone(server: Server, tmp_path: Path, method: str, path: str) -> None:
    marker = tmp_path / "pwned"
    body = {
        "name": "evil",
        "source_code": evil_yaml(marker),
        "overwrite": True,
        "save_file": True,
        "files": {"pipeline_wrapper.py": f"open({str(marker)!r}, 'w').close()"},
        "model": "dense_search",
        "messages": [{"role": "user", "content": f"touch {marker}"}],
    }
    answer = server.post_json(path, body) if method == "POST" else server.request(method, path)
    assert answer.status in (404, 405), (answer.status, answer.body[:300])
    assert set(server.request("GET", "/status").json()["pipelines"]) == set(ANSWERING)
    assert server.post_json("/dense_search/run", {"query": "zip"}).status == 200
    assert not marker.exists()


def test_deployed_tokenizer_cannot_run_commands(server: Server, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    deploy = server.post_json("/deploy-yaml", {"name": "evil", "source_code": evil_yaml(marker)})
    run = server.post_json("/evil/run", {"query": f"touch {marker}"})
    assert (deploy.status, run.status) == (404, 404)
    assert not marker.exists()


def test_no_cors_headers_without_cors_origin(server: Server) -> None:
    preflight = server.request(
        "OPTIONS",
        "/dense_search/run",
        headers={
            "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    simple = server.request("GET", "/status", headers={"Origin": "http://evil.example"})
    posted = server.post_json("/dense_search/run", {"query": "zip"}, headers={"Origin": "http://evil.example"})
    assert preflight.status == 405
    assert simple.status == 200
    assert posted.status == 200
    for answer in (preflight, simple, posted):
        assert not [name for name in answer.headers if name.startswith("access-control-")], answer.headers


def test_index_directory_is_unchanged_by_serving(server: Server, tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.support.serve import sample_index

    assert tree(sample_index(tmp_path_factory)) == tree_before_serving()
