"""TEI's ``GET /info`` and ``GET /health`` on `needle serve --reranker DIR` (``needle_retrieval.serve.rerank``).

``GET /info`` answers TEI's ``Info`` object (router ``Info``) field for field: ``model_type: {"reranker": {id2label,
label2id}}`` from the model's ``config.json``, the server's limits, ``version`` the TEI API level followed;
``model_id`` is the model directory's name, not its path. ``GET /health`` answers 200 with an empty body: the model
is loaded and probed before the server listens.
"""

from typing import Literal

from fastapi import FastAPI
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from transformers import AutoConfig

from components.rankers.local_cross_encoder_ranker import LocalCrossEncoderRanker

TEI_VERSION = "1.8.3"  # the TEI release whose HTTP answers these routes follow (statuses, auto_truncate default)
MODEL_DTYPE = "float32"  # the ranker is loaded with use_fp16=False
MAX_CONCURRENT_REQUESTS = 512  # TEI's default; requests over it queue here instead of getting 429


class TEIClassifierModel(BaseModel):
    """TEI's ``ClassifierModel``: the labels of the model's head, from its ``config.json``."""

    id2label: dict[str, str]
    label2id: dict[str, int]


class TEIInfo(BaseModel):
    """TEI's ``GET /info`` answer (router ``Info``), field for field."""

    model_config = ConfigDict(protected_namespaces=())
    model_id: str
    model_sha: str | None
    model_dtype: str
    served_model_name: str
    model_type: dict[Literal["reranker"], TEIClassifierModel]
    max_concurrent_requests: int
    max_input_length: int
    max_batch_tokens: int
    max_batch_requests: int | None
    max_client_batch_size: int
    auto_truncate: bool
    tokenization_workers: int
    version: str
    sha: str | None
    docker_label: str | None


def tei_info(
    ranker: LocalCrossEncoderRanker, name: str, scoring_batch: int, max_batch: int, auto_truncate: bool
) -> TEIInfo:
    """What ``GET /info`` answers for RANKER served as NAME: its labels and this server's limits (SCORING_BATCH pairs a
    forward pass, MAX_BATCH texts a request, AUTO_TRUNCATE), in TEI's fields."""
    config = AutoConfig.from_pretrained(ranker.model_path, local_files_only=True)
    labels = TEIClassifierModel(
        id2label={str(i): label for i, label in config.id2label.items()},
        label2id={label: int(i) for label, i in config.label2id.items()},
    )
    return TEIInfo(
        model_id=name,
        model_sha=None,
        model_dtype=MODEL_DTYPE,
        served_model_name=name,
        model_type={"reranker": labels},
        max_concurrent_requests=MAX_CONCURRENT_REQUESTS,
        max_input_length=ranker.max_tokens,
        max_batch_tokens=scoring_batch * ranker.max_tokens,
        max_batch_requests=scoring_batch,
        max_client_batch_size=max_batch,
        auto_truncate=auto_truncate,
        tokenization_workers=1,  # one request tokenizes and scores at a time
        version=TEI_VERSION,
        sha=None,
        docker_label=None,
    )


def info_routes(app: FastAPI, info: TEIInfo) -> None:
    """Add ``GET /info`` (TEI's Info object) and ``GET /health`` (200, empty: the model was probed at start-up)."""

    async def get_info() -> TEIInfo:
        return info

    async def health() -> Response:
        return Response(status_code=200)

    app.add_api_route(
        "/info",
        get_info,
        methods=["GET"],
        name="get_model_info",
        operation_id="get_model_info",
        tags=["rerank"],
        summary="The served model and limits (TEI's /info)",
        response_model=TEIInfo,
    )
    app.add_api_route(
        "/health",
        health,
        methods=["GET"],
        name="health",
        operation_id="health",
        tags=["rerank"],
        summary="200 when the reranker is ready (TEI's /health)",
        responses={200: {"description": "ready", "content": None}},
    )
