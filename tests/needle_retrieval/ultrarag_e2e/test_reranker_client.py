"""UltraRAG's own reranker server (servers/reranker/src/reranker.py, run by UltraRAG's python and called through its
fastmcp client) with its ``openai`` backend pointed at `needle serve --reranker DIR`: the lists it returns are
needle's own ranking of the passages, cut to ``top_k``, and the same as UltraRAG's ``sentence_transformers`` backend
gives with that cross-encoder in its own process. Skipped without ULTRARAG_SRC and ULTRARAG_PYTHON."""

from collections.abc import Iterator
from typing import Any

import pytest
from haystack import Document

from components.rankers import LocalCrossEncoderRanker
from tests.components.rankers.test_local_cross_encoder import minilm_cross_encoder  # noqa: F401 - session fixture
from tests.support.serve import Server, sample_index, start, stop
from tests.support.ultrarag import UltraRAG, mcp_calls, ultrarag_or_skip

pytestmark = pytest.mark.integration
TOP_K = 5
QUERIES = ["how do I read a zip archive", "which lock should a thread wait on", "parse a date string"]
PASSAGES = [
    [
        f"passage {i}: " + ("zip archives hold files" if i % 3 == 0 else f"threads and locks number {i}")
        for i in range(9)
    ],
    [f"locks {i}: a thread waits on a condition" if i % 2 else f"dates and times, format {i}" for i in range(8)],
    ["strptime parses a date string", "a zip archive", "time zones", "a calendar", "dates", "a lock", "a thread"],
]


@pytest.fixture(scope="module")
def ultrarag() -> UltraRAG:
    return ultrarag_or_skip()


@pytest.fixture(scope="module")
def server(
    ultrarag: UltraRAG,
    minilm_cross_encoder: str,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("ultrarag-rerank") / "server.log"
    started = start(sample_index(tmp_path_factory), log, "--reranker", minilm_cross_encoder)
    yield started
    stop(started)


def rerank_with(ultrarag: UltraRAG, backend: str, model: str, configs: dict[str, Any]) -> Any:
    """UltraRAG's reranker server, initialised with BACKEND, reranking PASSAGES for QUERIES."""
    init = {"model_name_or_path": model, "backend_configs": {backend: configs}, "batch_size": 16, "backend": backend}
    rerank = {"query_list": QUERIES, "passages_list": PASSAGES, "top_k": TOP_K}
    reranker = ultrarag.src / "servers" / "reranker" / "src" / "reranker.py"
    answers = mcp_calls(
        ultrarag,
        ["python", str(reranker)],
        [("reranker_init", init), ("reranker_rerank", rerank)],
        cwd=ultrarag.src,
    )
    assert "error" not in answers[0], answers[0]
    assert "error" not in answers[1], answers[1]
    return answers[1]["result"]["rerank_psg"]


def needle_ranking(model: str) -> list[list[str]]:
    """needle's own cross-encoder ranking of each query's passages, best TOP_K first."""
    ranker = LocalCrossEncoderRanker(model_path=model, use_fp16=False, top_k=TOP_K)
    ranker.warm_up()
    ranked = []
    for query, passages in zip(QUERIES, PASSAGES, strict=True):
        documents = ranker.run(query=query, documents=[Document(content=text) for text in passages])["documents"]
        ranked.append([doc.content or "" for doc in documents])
    return ranked


def test_reranker_client_gets_needles_ranking_from_needle_serve(
    ultrarag: UltraRAG,
    server: Server,
    minilm_cross_encoder: str,  # noqa: F811
) -> None:
    base_url = f"http://{server.host}:{server.port}/v1/rerank"
    served = rerank_with(ultrarag, "openai", "any-name", {"model_name": "minilm-cross-encoder", "base_url": base_url})
    assert served == needle_ranking(minilm_cross_encoder)


def test_needles_ranking_is_ultrarags_own_with_the_same_cross_encoder(
    ultrarag: UltraRAG,
    server: Server,
    minilm_cross_encoder: str,  # noqa: F811
) -> None:
    base_url = f"http://{server.host}:{server.port}/v1/rerank"
    served = rerank_with(ultrarag, "openai", "any-name", {"model_name": "minilm-cross-encoder", "base_url": base_url})
    own = rerank_with(ultrarag, "sentence_transformers", minilm_cross_encoder, {"device": "cpu"})
    assert [len(passages) for passages in served] == [TOP_K] * len(QUERIES)
    assert served == own
