"""UltraRAG's deploy protocol on a real `needle serve`: POST /search as the seed's client sends it.

The answer must be the local search's passages, in order, per query; bad requests are 4xx with a message.
"""

import json

import httpx
import pytest

from needle_retrieval.search.searcher import Searcher
from tests.support.serve import Server, sample_index, shared_server

pytestmark = pytest.mark.integration
QUERIES = ["parse command line options", "read and write zip archives", "run code in a thread", "regular expressions"]


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Server:
    return shared_server(request, tmp_path_factory)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Searcher:
    return Searcher(sample_index(tmp_path_factory), top_k=7)


def ultrarag_client(server: Server, payload: dict) -> httpx.Response:
    """What UltraRAG's retriever_deploy_search does: POST the JSON body to {retriever_url}/search."""
    return httpx.post(f"http://{server.host}:{server.port}/search", json=payload, timeout=120)


@pytest.mark.parametrize("top_k", [1, 7])
def test_search_returns_the_local_passages_in_order(server: Server, local: Searcher, top_k: int) -> None:
    answer = ultrarag_client(
        server, {"query_list": QUERIES, "top_k": top_k, "query_instruction": "", "collection_name": ""}
    )
    assert answer.status_code == 200, answer.text
    expected = [[doc.content for doc in docs][:top_k] for docs in local.search(QUERIES)]
    assert answer.json() == {"ret_psg": expected}
    assert local.mode == "hybrid"


def test_defaults_and_the_index_name_as_collection(server: Server, local: Searcher) -> None:
    name = local.index_dir.resolve().name
    answer = ultrarag_client(server, {"query_list": QUERIES[:1], "collection_name": name})
    assert answer.status_code == 200, answer.text
    assert answer.json()["ret_psg"] == [[doc.content for doc in local.search(QUERIES[:1])[0]][:5]]


def test_query_instruction_changes_the_dense_part_only(server: Server) -> None:
    """An instruction reaches the embedder: BM25 alone cannot move, the hybrid answer may (and stays valid)."""
    plain = ultrarag_client(server, {"query_list": ["zip"], "top_k": 5}).json()["ret_psg"]
    prefixed = ultrarag_client(server, {"query_list": ["zip"], "top_k": 5, "query_instruction": "Represent: "})
    assert prefixed.status_code == 200, prefixed.text
    assert len(prefixed.json()["ret_psg"][0]) == len(plain[0]) == 5


MiB = 1 << 20
BAD = [
    ("empty query_list", {"query_list": []}, 422, "query_list"),
    ("query_list not a list", {"query_list": "zip"}, 422, "query_list"),
    ("query_list missing", {"top_k": 3}, 422, "query_list"),
    ("a query not a string", {"query_list": ["zip", 3]}, 422, "query_list"),
    ("a blank query", {"query_list": ["zip", "  "]}, 422, "query_list[1]"),
    ("a lone surrogate", {"query_list": ["\ud800"]}, 422, "query_list[0]"),
    ("a query over 1 MiB", {"query_list": ["a" * (MiB + 1)]}, 413, "query_list[0]"),
    ("top_k zero", {"query_list": ["zip"], "top_k": 0}, 422, "top_k"),
    ("top_k too large", {"query_list": ["zip"], "top_k": 10001}, 422, "top_k"),
    ("top_k a string", {"query_list": ["zip"], "top_k": "5"}, 422, "top_k"),
    ("unknown collection", {"query_list": ["zip"], "collection_name": "wiki"}, 404, "wiki"),
    ("unknown field", {"query_list": ["zip"], "filters": {}}, 422, "filters"),
]


@pytest.mark.parametrize(("label", "payload", "status", "named"), BAD, ids=[b[0] for b in BAD])
def test_bad_requests_are_4xx_with_a_message(
    server: Server, label: str, payload: dict, status: int, named: str
) -> None:
    answer = server.post_json("/search", payload)
    assert answer.status == status, (label, answer.body[:300])
    detail = json.dumps(answer.json()["detail"])
    assert named in detail
    assert "Traceback" not in detail


def test_search_is_in_the_openapi_schema(server: Server) -> None:
    paths = server.request("GET", "/openapi.json").json()["paths"]
    assert "/search" in paths
    assert "/mcp" not in paths
