"""UltraRAG's deploy protocol on a real `needle serve`: POST /search as the seed's client sends it.

The answer must be the local dense search's passages, in order, per query (UltraRAG's retriever_search is dense);
bodies UltraRAG's own server takes (loose top_k, unknown fields, any collection_name on FAISS) are answered alike;
bad requests are 4xx with a message.
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
    return Searcher(sample_index(tmp_path_factory), mode="dense", top_k=7)


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


def test_search_is_dense_where_the_index_has_hybrid_too(server: Server, local: Searcher) -> None:
    """UltraRAG's retriever_search is dense: on a dense+BM25 index /search is not the hybrid (the best mode)."""
    hybrid = Searcher(local.index_dir, top_k=7)
    assert hybrid.mode == "hybrid"
    answer = ultrarag_client(server, {"query_list": QUERIES, "top_k": 7}).json()["ret_psg"]
    assert answer == [[doc.content for doc in docs] for docs in local.search(QUERIES)]
    assert answer != [[doc.content for doc in docs] for docs in hybrid.search(QUERIES)]


def test_defaults_and_the_index_name_as_collection(server: Server, local: Searcher) -> None:
    name = local.index_dir.resolve().name
    answer = ultrarag_client(server, {"query_list": QUERIES[:1], "collection_name": name})
    assert answer.status_code == 200, answer.text
    assert answer.json()["ret_psg"] == [[doc.content for doc in local.search(QUERIES[:1])[0]][:5]]


def test_query_instruction_reaches_the_embedder(server: Server, local: Searcher) -> None:
    """The instruction is put in front of the query, as the local search with that instruction does."""
    prefixed = ultrarag_client(server, {"query_list": QUERIES, "top_k": 5, "query_instruction": "Represent: "})
    assert prefixed.status_code == 200, prefixed.text
    instructed = Searcher(local.index_dir, mode="dense", top_k=5, query_instruction="Represent: ")
    assert prefixed.json()["ret_psg"] == [[doc.content for doc in docs] for docs in instructed.search(QUERIES)]
    assert prefixed.json()["ret_psg"] != [[doc.content for doc in docs][:5] for docs in local.search(QUERIES)]


# Bodies UltraRAG's deploy server (a plain pydantic model under FastAPI) takes, each the same search as top_k 3.
LOOSE = [
    ("top_k a string", {"top_k": "3"}),
    ("top_k padded, signed, zero-led", {"top_k": " +03 "}),
    ("top_k with a zero fraction", {"top_k": "3.0"}),
    ("top_k a JSON float", {"top_k": 3.0}),
    ("unknown fields", {"top_k": 3, "filters": {"x": 1}, "stream": True}),
    ("UltraRAG's example collection", {"top_k": 3, "collection_name": "wiki"}),
]


@pytest.mark.parametrize(("label", "extra"), LOOSE, ids=[loose[0] for loose in LOOSE])
def test_bodies_ultrarags_server_takes_are_answered_alike(
    server: Server, local: Searcher, label: str, extra: dict
) -> None:
    answer = ultrarag_client(server, {"query_list": QUERIES, **extra})
    assert answer.status_code == 200, (label, answer.text)
    assert answer.json()["ret_psg"] == [[doc.content for doc in docs][:3] for docs in local.search(QUERIES)]


def test_top_k_true_is_one_as_in_pydantic(server: Server, local: Searcher) -> None:
    answer = ultrarag_client(server, {"query_list": QUERIES[:1], "top_k": True})
    assert answer.status_code == 200, answer.text
    assert answer.json()["ret_psg"] == [[local.search(QUERIES[:1])[0][0].content]]


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
    ("top_k a string too large", {"query_list": ["zip"], "top_k": "10_001"}, 422, "top_k"),
    ("top_k a word", {"query_list": ["zip"], "top_k": "five"}, 422, "top_k"),
    ("top_k a fraction", {"query_list": ["zip"], "top_k": "2.5"}, 422, "top_k"),
    ("top_k false", {"query_list": ["zip"], "top_k": False}, 422, "top_k"),
    ("top_k null", {"query_list": ["zip"], "top_k": None}, 422, "top_k"),
    ("collection_name a number", {"query_list": ["zip"], "collection_name": 5}, 422, "collection_name"),
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
