"""Real TEI clients against a real `needle serve --reranker DIR`: Haystack's ``HuggingFaceTEIRanker``
(huggingface-api-haystack) and ``tei-client``'s ``HttpClient`` rank through it unchanged, a text over the model's
512 tokens included, and ``GET /info`` holds every field of TEI's ``Info`` schema with TEI's types."""

import math

import pytest
from haystack import Document
from haystack_integrations.components.rankers.huggingface_api import HuggingFaceTEIRanker, TruncationDirection
from tei_client import HttpClient, ModelType
from tei_client.models import TruncationDirection as TEIClientDirection

from tests.components.rankers.test_local_cross_encoder import minilm_cross_encoder  # noqa: F401 - session fixture behind the two below
from tests.support.serve import Server

from .test_rerank import LONG, QUERY, Oracle, server, tei_truncated  # noqa: F401 - the shared server, TEI's scores

pytestmark = pytest.mark.integration
DOCUMENTS = [
    Document(id="long", content=LONG),
    Document(id="zip", content="the zipfile module reads and writes zip archives"),
    Document(id="threads", content="a lock makes threads wait for each other"),
]
# TEI 1.9.3's docs/openapi.json, components.schemas.Info: required fields, then the nullable ones, with JSON types.
INFO_REQUIRED = {
    "model_id": str,
    "model_dtype": str,
    "served_model_name": str,
    "model_type": dict,
    "max_concurrent_requests": int,
    "max_input_length": int,
    "max_batch_tokens": int,
    "max_client_batch_size": int,
    "auto_truncate": bool,
    "tokenization_workers": int,
    "version": str,
}
INFO_NULLABLE = {"model_sha": str, "max_batch_requests": int, "sha": str, "docker_label": str}


def base_url(server: Server) -> str:  # noqa: F811
    return f"http://{server.host}:{server.port}"


@pytest.mark.parametrize("direction", [TruncationDirection.LEFT, TruncationDirection.RIGHT])
def test_haystack_tei_ranker_ranks_a_long_document_truncated(
    server: Server,  # noqa: F811
    tei_truncated: Oracle,  # noqa: F811
    direction: TruncationDirection,
) -> None:
    """The client sends ``truncate: true`` and ``"Left"``/``"Right"``; the long document is scored as TEI cuts it."""
    ranker = HuggingFaceTEIRanker(url=base_url(server), top_k=3, token=None)
    ranked = ranker.run(query=QUERY, documents=DOCUMENTS, truncation_direction=direction)["documents"]
    assert sorted(doc.id for doc in ranked) == ["long", "threads", "zip"]
    assert [doc.score for doc in ranked] == sorted((doc.score for doc in ranked), reverse=True)
    long_score = next(doc.score for doc in ranked if doc.id == "long")
    assert long_score == pytest.approx(tei_truncated(QUERY, LONG, direction.value.lower()), rel=1e-4)


def test_haystack_tei_ranker_without_truncation_gets_teis_refusal(server: Server) -> None:  # noqa: F811
    """No direction: the client sends no ``truncate``, the server's auto_truncate is off, so TEI's 413 comes back."""
    ranker = HuggingFaceTEIRanker(url=base_url(server), top_k=3, token=None)
    with pytest.raises(RuntimeError, match=r"413[\s\S]*must have less than 512 tokens"):
        ranker.run(query=QUERY, documents=DOCUMENTS)


def test_haystack_tei_ranker_top_k_and_raw_scores(server: Server) -> None:  # noqa: F811
    """``raw_scores`` gives the logits whose sigmoid the default answer holds; ``top_k`` keeps the best."""
    url = base_url(server)
    raw = HuggingFaceTEIRanker(url=url, top_k=1, raw_scores=True, token=None).run(QUERY, DOCUMENTS[1:])["documents"]
    squashed = HuggingFaceTEIRanker(url=url, top_k=2, token=None).run(QUERY, DOCUMENTS[1:])["documents"]
    assert len(raw) == 1
    assert raw[0].id == squashed[0].id
    assert squashed[0].score == pytest.approx(1 / (1 + math.exp(-raw[0].score)), rel=1e-4)


def test_tei_client_reads_info_then_reranks(server: Server, tei_truncated: Oracle) -> None:  # noqa: F811
    client = HttpClient(base_url(server), timeout=120)
    assert client.health()
    info = client.info()
    assert info.server_model_type is ModelType.Reranker
    assert info.server_model_metadata is not None
    assert (info.max_input_length, info.max_client_batch_size) == (512, 32)
    texts = [doc.content or "" for doc in DOCUMENTS]
    result = client.rerank(QUERY, texts, return_text=True, truncate=True, truncation_direction=TEIClientDirection.Left)
    assert sorted(rank.index for rank in result.ranks) == [0, 1, 2]
    assert all(rank.text == texts[rank.index] for rank in result.ranks)
    long_score = next(rank.score for rank in result.ranks if rank.index == 0)
    assert long_score == pytest.approx(tei_truncated(QUERY, LONG, "left"), rel=1e-4)


def test_info_has_every_field_of_teis_schema(server: Server) -> None:  # noqa: F811
    info = server.request("GET", "/info").json()
    assert isinstance(info, dict)
    for field, kind in INFO_REQUIRED.items():
        assert type(info[field]) is kind, (field, info[field])
    for field, kind in INFO_NULLABLE.items():
        assert info[field] is None or type(info[field]) is kind, (field, info[field])
    assert info["model_id"] == "minilm-cross-encoder"  # the directory's name: no server path leaks
    assert info["model_type"] == {"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}}
    assert (info["max_input_length"], info["max_client_batch_size"], info["auto_truncate"]) == (512, 32, False)
