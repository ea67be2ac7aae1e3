"""The Cohere/Jina/Infinity rerank shape on a real `needle serve --reranker DIR`: ``POST /v1/rerank``, and ``POST
/rerank`` for a body with ``documents`` (no ``texts``), as UltraRAG's reranker server posts it with its ``openai``
backend and reads its answer; scores and order are the local cross-encoder's, long documents are truncated as those
APIs truncate them, and refusals have TEI's shape and statuses, as on TEI's route."""

import math

import httpx
import numpy as np
import pytest

from components.rankers import LocalCrossEncoderRanker
from tests.components.rankers.test_local_cross_encoder import minilm_cross_encoder  # noqa: F401 - session fixture behind the two below
from tests.support.serve import Server

from . import test_rerank
from .test_rerank import LONG, QUERY, TEXTS, Oracle

# test_rerank's fixtures: its `needle serve --reranker` (one per session), the local ranker and TEI's scores.
server, local, tei_truncated = test_rerank.server, test_rerank.local, test_rerank.tei_truncated

pytestmark = pytest.mark.integration
ROUTES = ["/v1/rerank", "/rerank"]  # base_url as vLLM's and Jina's APIs are addressed, and as TEI's route is
MODEL = "minilm-cross-encoder"  # the served model directory's name


def ultrarag_openai_rerank(server: Server, route: str, query: str, docs: list[str], top_k: int) -> list[str]:
    """UltraRAG's reranker client, backend ``openai`` (servers/reranker/src/reranker.py, ``rerank_single_oa``): the
    payload it builds, posted to its base_url as it is, and the answer read as it reads it."""
    payload = {"model": "bge-reranker-v2-m3", "query": query, "documents": docs, "top_n": top_k}
    resp = httpx.post(f"http://{server.host}:{server.port}{route}", json=payload, timeout=120)
    if resp.status_code != 200:
        raise RuntimeError(f"[{resp.status_code}] {resp.text}")
    data = resp.json()
    results = data.get("results", [])
    ret = []
    for item in results:
        doc_val = item.get("document")
        if isinstance(doc_val, dict):
            doc_val = doc_val.get("text", "")
        if isinstance(doc_val, str):
            ret.append(doc_val)
    return ret


@pytest.mark.parametrize("route", ROUTES)
def test_ultrarags_openai_backend_gets_the_local_rankers_top_k(
    server: Server, local: LocalCrossEncoderRanker, route: str
) -> None:
    docs = TEXTS[:20]
    expected = [docs[i] for i in np.argsort(-local.rerank(QUERY, docs), kind="stable")[:5]]
    assert ultrarag_openai_rerank(server, route, QUERY, docs, 5) == expected


@pytest.mark.parametrize("route", ROUTES)
def test_every_document_ranked_with_its_index_and_sigmoid_score(
    server: Server, local: LocalCrossEncoderRanker, route: str
) -> None:
    answer = server.post_json(route, {"query": QUERY, "documents": TEXTS[:12]})
    assert answer.status == 200, answer.body
    body = answer.json()
    assert body["model"] == MODEL
    logits = local.rerank(QUERY, TEXTS[:12])
    assert [result["index"] for result in body["results"]] == list(np.argsort(-logits, kind="stable"))
    np.testing.assert_allclose(
        [result["relevance_score"] for result in body["results"]], 1 / (1 + np.exp(-np.sort(logits)[::-1])), rtol=1e-4
    )
    assert [result["document"] for result in body["results"]] == [{"text": TEXTS[r["index"]]} for r in body["results"]]


def test_objects_rank_as_strings_and_documents_can_be_left_out(server: Server) -> None:
    strings = server.post_json("/v1/rerank", {"query": QUERY, "documents": TEXTS[:6], "top_n": 3}).json()
    objects = [{"text": text, "title": f"t{i}"} for i, text in enumerate(TEXTS[:6])]
    bare_body = {"query": QUERY, "documents": objects, "top_n": 3, "return_documents": False}
    answer = server.post_json("/v1/rerank", bare_body)
    assert answer.status == 200, answer.body
    bare = answer.json()["results"]
    assert [{"index": r["index"], "relevance_score": r["relevance_score"]} for r in strings["results"]] == bare
    assert len(bare) == 3


def test_a_document_over_the_token_limit_is_truncated_not_refused(server: Server, tei_truncated: Oracle) -> None:
    answer = server.post_json("/v1/rerank", {"query": QUERY, "documents": [LONG, "t"]})
    assert answer.status == 200, answer.body
    score = next(r["relevance_score"] for r in answer.json()["results"] if r["index"] == 0)
    assert score == pytest.approx(tei_truncated(QUERY, LONG, "right"), rel=1e-4)


def test_rerank_with_texts_stays_teis(server: Server) -> None:
    """``texts`` decides: a body with both is TEI's, answered as TEI answers."""
    answer = server.post_json("/rerank", {"query": QUERY, "texts": TEXTS[:3], "documents": ["ignored"]})
    assert answer.status == 200, answer.body
    assert sorted(entry["index"] for entry in answer.json()) == [0, 1, 2]
    assert set(answer.json()[0]) == {"index", "score"}


REFUSED = [
    ({"query": QUERY, "documents": []}, 400, "empty", "`documents` cannot be empty"),
    ({"query": QUERY, "documents": ["t"] * 33}, 413, "validation", "maximum allowed batch size 32"),
    ({"query": " ", "documents": ["t"]}, 422, "validation", "query is empty"),
    ({"documents": ["t"]}, 422, "validation", "query"),
    ({"query": QUERY, "documents": "t"}, 422, "validation", "documents"),
    ({"query": QUERY, "documents": ["t", ""]}, 422, "validation", "documents"),
    ({"query": QUERY, "documents": [{"title": "no text"}]}, 422, "validation", "text"),
    ({"query": QUERY, "documents": ["t", "\ud800"]}, 422, "validation", "documents[1]"),
    ({"query": QUERY, "documents": ["t"], "top_n": 0}, 422, "validation", "top_n"),
    ({"query": QUERY, "documents": ["t"], "top_n": "5"}, 422, "validation", "top_n"),
    ({"query": QUERY, "documents": ["t"], "return_documents": None}, 422, "validation", "return_documents"),
]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("body", "status", "error_type", "message"), REFUSED)
def test_refusals_have_teis_shape_on_one_line(
    server: Server, route: str, body: dict, status: int, error_type: str, message: str
) -> None:
    answer = server.post_json(route, body)
    assert answer.status == status, answer.body
    assert answer.json()["error_type"] == error_type
    assert message in answer.json()["error"]
    assert "\n" not in answer.json()["error"]


def test_a_body_that_is_not_json_is_refused(server: Server) -> None:
    answer = server.request("POST", "/v1/rerank", b'{"query": ', {"Content-Type": "application/json"})
    assert answer.status == 422
    assert answer.json()["error"].startswith("Failed to parse the request body as JSON")


def test_top_n_past_the_documents_answers_them_all(server: Server) -> None:
    answer = server.post_json("/v1/rerank", {"query": QUERY, "documents": TEXTS[:4], "top_n": 10})
    assert sorted(r["index"] for r in answer.json()["results"]) == [0, 1, 2, 3]
    assert all(0 < r["relevance_score"] < 1 and math.isfinite(r["relevance_score"]) for r in answer.json()["results"])
