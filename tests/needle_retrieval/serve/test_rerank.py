"""TEI's /rerank, /info and /health on a real `needle serve --reranker DIR`: our TEIRanker ranks through it exactly
as the local cross-encoder does in process, every body TEI accepts is accepted, over-long pairs are truncated on
the requested side as TEI truncates them, and refusals have TEI's shapes and statuses."""

import math
from collections.abc import Callable

import numpy as np
import pytest
import torch
from haystack import Document
from schemathesis import GenerationMode
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from components.rankers import LocalCrossEncoderRanker, TEIRanker
from tests.components.rankers.test_local_cross_encoder import minilm_cross_encoder  # noqa: F401 - session fixture: the served cross-encoder
from tests.needle_retrieval.serve.test_api import api_schema, conforms
from tests.support.serve import Server, sample_index, start, stop

pytestmark = pytest.mark.integration
QUERY = "how do I read a zip archive"
TEXTS = [
    f"passage {i}: " + ("zip archives hold files" if i % 4 == 0 else f"threads and locks number {i}") for i in range(40)
]
# Far over MiniLM's 512 tokens, with a head and a tail that score differently: the side cut off shows in the score.
LONG = "zip archives hold files and read them. " * 30 + "threads wait on locks and conditions. " * 120
Oracle = Callable[[str, str, str], float]
_SERVER: list[Server] = []


@pytest.fixture(scope="session")
def server(
    request: pytest.FixtureRequest,
    minilm_cross_encoder: str,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Server:
    """One `needle serve --reranker` for this module and test_serve_rerank_clients, stopped at the session's end."""
    if not _SERVER:
        log = tmp_path_factory.mktemp("rerank-log") / "server.log"
        started = start(sample_index(tmp_path_factory), log, "--reranker", minilm_cross_encoder)
        request.config.add_cleanup(lambda: stop(started))
        _SERVER.append(started)
    return _SERVER[0]


@pytest.fixture(scope="session")
def tei_truncated(minilm_cross_encoder: str) -> Oracle:  # noqa: F811
    """TEI's score of (query, text, side), computed here with transformers alone: the pair cut longest first to
    TEI's limit for a BERT without a sentence-transformers config (``max_position_embeddings``) on that side."""
    tokenizer = AutoTokenizer.from_pretrained(minilm_cross_encoder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(minilm_cross_encoder, local_files_only=True).eval()
    limit = model.config.max_position_embeddings

    def score(query: str, text: str, side: str) -> float:
        tokenizer.truncation_side = side
        pair = tokenizer(query, text, truncation="longest_first", max_length=limit, return_tensors="pt")
        with torch.inference_mode():
            logit = float(model(**pair).logits.item())
        return 1 / (1 + math.exp(-logit))

    return score


@pytest.fixture(scope="module")
def local(minilm_cross_encoder: str) -> LocalCrossEncoderRanker:  # noqa: F811
    ranker = LocalCrossEncoderRanker(model_path=minilm_cross_encoder, use_fp16=False, top_k=40)
    ranker.warm_up()
    return ranker


def test_tei_ranker_through_rerank_orders_as_the_local_ranker(server: Server, local: LocalCrossEncoderRanker) -> None:
    documents = [Document(id=str(i), content=text) for i, text in enumerate(TEXTS)]
    remote = TEIRanker(url=f"http://{server.host}:{server.port}/rerank", top_k=40, api_key=None)
    served = remote.run(query=QUERY, documents=documents)["documents"]  # 40 texts: two requests under the 32 limit
    in_process = local.run(query=QUERY, documents=documents)["documents"]
    assert [doc.id for doc in served] == [doc.id for doc in in_process]
    expected = 1 / (1 + np.exp(-np.array([doc.score for doc in in_process])))  # TEI's scores: sigmoid of logits
    np.testing.assert_allclose([doc.score for doc in served], expected, rtol=1e-4)


def test_raw_scores_and_return_text(server: Server, local: LocalCrossEncoderRanker) -> None:
    body = {"query": QUERY, "texts": TEXTS[:5], "raw_scores": True, "return_text": True}
    answer = server.post_json("/rerank", body)
    assert answer.status == 200, answer.body
    entries = answer.json()
    logits = local.rerank(QUERY, TEXTS[:5])
    assert [entry["index"] for entry in entries] == list(np.argsort(-logits, kind="stable"))
    np.testing.assert_allclose([entry["score"] for entry in entries], np.sort(logits)[::-1], rtol=1e-4)
    assert [entry["text"] for entry in entries] == [TEXTS[entry["index"]] for entry in entries]


@pytest.mark.parametrize(
    ("body", "status", "error_type", "message"),
    [
        ({"query": "q", "texts": ["t"] * 33}, 413, "validation", "maximum allowed batch size 32"),
        ({"query": "q", "texts": []}, 400, "empty", "cannot be empty"),
        ({"query": "q", "texts": "t"}, 422, "validation", "texts"),
        ({"texts": ["t"]}, 422, "validation", "query"),
        ({"query": " ", "texts": ["t"]}, 422, "validation", "query is empty"),
        ({"query": "q", "texts": ["word " * 600]}, 413, "validation", "must have less than 512 tokens"),
        ({"query": "q", "texts": ["word " * 600], "truncate": None}, 413, "validation", "Given: 604"),
        ({"query": "q", "texts": ["word " * 600], "truncate": False}, 413, "validation", "tokens"),
        ({"query": "q", "texts": ["t"], "truncation_direction": "middle"}, 422, "validation", "truncation_direction"),
        ({"query": "q", "texts": ["t"], "truncation_direction": "RIGHT"}, 422, "validation", "truncation_direction"),
        ({"query": "q", "texts": ["t"], "truncation_direction": None}, 422, "validation", "truncation_direction"),
        ({"query": "q", "texts": ["t"], "raw_scores": None}, 422, "validation", "raw_scores"),
        ({"query": "q", "texts": ["t"], "return_text": None}, 422, "validation", "return_text"),
        ({"query": "q", "texts": ["t"], "truncate": "true"}, 422, "validation", "truncate"),
    ],
)
def test_refusals_have_teis_shape(server: Server, body: dict, status: int, error_type: str, message: str) -> None:
    answer = server.post_json("/rerank", body)
    assert answer.status == status, answer.body
    assert answer.json()["error_type"] == error_type
    assert message in answer.json()["error"]


@pytest.mark.parametrize(
    "extra",
    [
        {"truncate": None},
        {"truncation_direction": "left"},
        {"truncation_direction": "Left"},
        {"truncation_direction": "right"},
        {"truncation_direction": "Right"},
        {"truncate": True, "truncation_direction": "Right", "raw_scores": False, "return_text": False},
        {"unknown_field": [1, 2]},
    ],
)
def test_every_body_tei_accepts_is_answered(server: Server, extra: dict) -> None:
    answer = server.post_json("/rerank", {"query": QUERY, "texts": TEXTS[:3], **extra})
    assert answer.status == 200, answer.body
    assert sorted(entry["index"] for entry in answer.json()) == [0, 1, 2]


@pytest.mark.parametrize("direction", ["left", "Left", "right", "Right"])
def test_truncate_ranks_a_long_text_cut_on_the_requested_side(
    server: Server, tei_truncated: Oracle, direction: str
) -> None:
    body = {"query": QUERY, "texts": [LONG, "t"], "truncate": True, "truncation_direction": direction}
    answer = server.post_json("/rerank", body)
    assert answer.status == 200, answer.body
    score = next(entry["score"] for entry in answer.json() if entry["index"] == 0)
    assert score == pytest.approx(tei_truncated(QUERY, LONG, direction.lower()), rel=1e-4)


def test_the_two_sides_keep_different_parts(tei_truncated: Oracle) -> None:
    """The check above could not tell the sides apart if cutting either side gave the same score."""
    assert tei_truncated(QUERY, LONG, "left") != pytest.approx(tei_truncated(QUERY, LONG, "right"), rel=1e-3)


def test_health_and_info_answer_as_tei(server: Server) -> None:
    health = server.request("GET", "/health")
    assert (health.status, health.body) == (200, b"")
    paths = set(server.request("GET", "/openapi.json").json()["paths"])
    assert {"/rerank", "/v1/rerank", "/info", "/health"} <= paths


RERANK_OPERATIONS = [("POST", path, mode) for path in ["/rerank", "/v1/rerank"] for mode in GenerationMode]
RERANK_OPERATIONS += [("GET", "/info", GenerationMode.POSITIVE), ("GET", "/health", GenerationMode.POSITIVE)]


@pytest.mark.parametrize(("method", "path", "mode"), RERANK_OPERATIONS)
def test_generated_requests_are_answered_as_the_schema_says(
    server: Server, method: str, path: str, mode: GenerationMode
) -> None:
    """25 requests per operation and mode, checked as ``POST /search``'s are: before, an empty query and an empty
    ``texts`` were schema-valid (TEI's refusals 422 and 400), a missing body was allowed, and the 422 and 424 TEI
    answers, and every answer's shape, were undeclared."""
    conforms(server, api_schema(server)[path][method], mode, examples=25)


def test_a_bad_reranker_dir_stops_the_start_up(tmp_path_factory: pytest.TempPathFactory) -> None:
    import subprocess

    from tests.support.paths import REPO
    from tests.support.serve import needle_command, server_env

    done = subprocess.run(
        needle_command("serve", str(sample_index(tmp_path_factory)), "--reranker", "relative/model", "--port", "1"),
        check=False,
        cwd=REPO,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "--reranker relative/model failed to load" in done.stderr
