"""TEI's /rerank on a real `needle serve --reranker DIR`: our TEIRanker ranks through it exactly as the local
cross-encoder does in process, and refusals have TEI's shapes and statuses."""

from collections.abc import Iterator

import numpy as np
import pytest
from haystack import Document
from serve_support import Server, sample_index, started
from test_rankers_local import minilm_cross_encoder  # noqa: F401 - session fixture: the served cross-encoder

from components.rankers import LocalCrossEncoderRanker, TEIRanker

pytestmark = pytest.mark.integration
QUERY = "how do I read a zip archive"
TEXTS = [
    f"passage {i}: " + ("zip archives hold files" if i % 4 == 0 else f"threads and locks number {i}") for i in range(40)
]


@pytest.fixture(scope="module")
def server(minilm_cross_encoder: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:  # noqa: F811
    log = tmp_path_factory.mktemp("rerank-log") / "server.log"
    with started(sample_index(tmp_path_factory), log, "--reranker", minilm_cross_encoder) as server:
        yield server


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
        ({"query": "q", "texts": ["word " * 600]}, 413, "validation", "tokens"),
        ({"query": "q", "texts": ["t"], "truncation_direction": "left"}, 422, "validation", "truncation_direction"),
    ],
)
def test_refusals_have_teis_shape(server: Server, body: dict, status: int, error_type: str, message: str) -> None:
    answer = server.post_json("/rerank", body)
    assert answer.status == status, answer.body
    assert answer.json()["error_type"] == error_type
    assert message in answer.json()["error"]


def test_truncate_accepts_a_long_pair(server: Server) -> None:
    answer = server.post_json("/rerank", {"query": "q", "texts": ["word " * 600, "t"], "truncate": True})
    assert answer.status == 200, answer.body
    assert sorted(entry["index"] for entry in answer.json()) == [0, 1]


def test_a_bad_reranker_dir_stops_the_start_up(tmp_path_factory: pytest.TempPathFactory) -> None:
    import subprocess

    from serve_support import REPO, needle_command, server_env

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
