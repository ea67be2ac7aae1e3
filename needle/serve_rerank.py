"""A TEI-compatible ``POST /rerank`` on `needle serve`, scoring with a local cross-encoder (``--reranker DIR``).

Request and answer follow text-embeddings-inference: ``{"query", "texts", "truncate"=false,
"truncation_direction"="right", "raw_scores"=false, "return_text"=false}`` -> ``[{"index", "score", "text"?}]``,
best first (ties by index). Scores are the model's logits with ``raw_scores``, else their sigmoid, as TEI gives
for a one-label model. Errors are TEI's ``{"error", "error_type"}``: 400 ``empty`` for no texts, 413
``validation`` for more texts than the batch limit (``--reranker-max-batch``, 32 like TEI's
``--max-client-batch-size``) or a pair over the model's token limit without ``truncate``, 422 ``validation`` for
a malformed body or bad text, 424 ``backend`` when the model fails (details only in the server log). The model
directory passes mxRAG's checks (``LocalCrossEncoderRanker``) and is probed at start-up.
"""

import json
import threading
from typing import Any, Literal

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from hayhooks.server.logger import log
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.concurrency import run_in_threadpool
from transformers import AutoTokenizer

from components.checks import check_int, check_query
from components.rankers.local_cross_encoder_ranker import LocalCrossEncoderRanker
from components.rankers.reranker_base import TEXTS_MAX_COUNT, Scores, check_texts
from needle.index_dir import NeedleError
from needle.serve_pipelines import one_line, root_cause
from needle.serve_run import validation_message

DEFAULT_MAX_BATCH = 32  # TEI's --max-client-batch-size default
SCORING_BATCH = 32  # pairs per forward pass


class TEIRerankRequest(BaseModel):
    """TEI's rerank body; like TEI, unknown fields are ignored."""

    model_config = ConfigDict(strict=True)
    query: str
    texts: list[str]
    truncate: bool = False
    truncation_direction: Literal["right"] = "right"  # left truncation is not supported by the local ranker
    raw_scores: bool = False
    return_text: bool = False


class TEIError(Exception):
    """An answer in TEI's error shape."""

    def __init__(self, status: int, message: str, error_type: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type

    def response(self) -> JSONResponse:
        return JSONResponse({"error": str(self), "error_type": self.error_type}, self.status)


class RerankService:
    """A loaded cross-encoder behind ``/rerank``: one request scores at a time (the tokenizer is not thread-safe)."""

    def __init__(self, model_dir: str, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        """Check, load and probe the model; a NeedleError naming MODEL_DIR if any step fails."""
        self.max_batch = check_int("--reranker-max-batch", max_batch, 1, TEXTS_MAX_COUNT)
        self._lock = threading.Lock()
        try:
            self.ranker = LocalCrossEncoderRanker(model_path=model_dir, use_fp16=False, batch_size=SCORING_BATCH)
            self.ranker.warm_up()  # mxRAG's directory checks run here, before anything is loaded
            self._tokenizer = AutoTokenizer.from_pretrained(self.ranker.model_path, local_files_only=True)
            self.ranker.rerank("needle serve start-up probe", ["probe"])
        except Exception as error:
            raise NeedleError(f"--reranker {model_dir} failed to load: {one_line(root_cause(error))}") from error

    def check(self, request: TEIRerankRequest) -> None:
        """TEI's refusals, in TEI's order: no texts, too many texts, then our input checks and the token limit."""
        if not request.texts:
            raise TEIError(400, "`texts` cannot be empty", "empty")
        if len(request.texts) > self.max_batch:
            raise TEIError(
                413, f"batch size {len(request.texts)} > maximum allowed batch size {self.max_batch}", "validation"
            )
        try:
            check_query(request.query)
            check_texts(request.texts)
        except ValueError as error:
            raise TEIError(422, one_line(error), "validation") from error

    def _too_long(self, query: str, texts: list[str]) -> None:
        """413 for the first pair over the model's token limit (when the client did not ask to truncate)."""
        lengths = [len(ids) for ids in self._tokenizer([query] * len(texts), texts)["input_ids"]]
        for i, length in enumerate(lengths):
            if length > self.ranker.max_tokens:
                message = f"`inputs` must have less than {self.ranker.max_tokens} tokens. Given: {length} (texts[{i}])"
                raise TEIError(413, message, "validation")

    def score(self, request: TEIRerankRequest) -> Scores:
        """Scores in input order: logits, or their sigmoid unless ``raw_scores``."""
        with self._lock:
            if not request.truncate:
                self._too_long(request.query, request.texts)
            logits = self.ranker.rerank(request.query, request.texts, SCORING_BATCH).astype(np.float64)
        return logits if request.raw_scores else 1.0 / (1.0 + np.exp(-logits))


def ranked(request: TEIRerankRequest, scores: Scores) -> list[dict[str, Any]]:
    """TEI's answer: one entry per text, best first, ties in input order."""
    order = np.argsort(-scores, kind="stable")
    entries: list[dict[str, Any]] = []
    for i in order.tolist():
        entry: dict[str, Any] = {"index": i, "score": float(scores[i])}
        if request.return_text:
            entry["text"] = request.texts[i]
        entries.append(entry)
    return entries


async def parse(request: Request) -> TEIRerankRequest:
    """The body as a TEIRerankRequest, or a 422 ``validation`` error saying what is wrong with it."""
    try:
        return TEIRerankRequest.model_validate(json.loads(await request.body()))
    except ValidationError as error:
        message = f"Failed to deserialize the JSON body: {validation_message(error)}"
        raise TEIError(422, message, "validation") from error
    except (ValueError, RecursionError) as error:  # invalid JSON or UTF-8, nesting too deep
        raise TEIError(422, f"Failed to parse the request body as JSON: {one_line(error)}", "validation") from error


REQUEST_SCHEMA = TEIRerankRequest.model_json_schema()


def rerank_route(app: FastAPI, service: RerankService) -> None:
    """Add ``POST /rerank``."""

    async def rerank(request: Request) -> JSONResponse:
        try:
            body = await parse(request)
            service.check(body)
            scores = await run_in_threadpool(service.score, body)
        except TEIError as error:
            return error.response()
        except Exception as error:
            log.opt(exception=error).error("rerank failed: {}", one_line(root_cause(error)))
            return TEIError(424, "the reranker failed; the server log has the details", "backend").response()
        return JSONResponse(ranked(body, scores))

    app.add_api_route(
        "/rerank",
        rerank,
        methods=["POST"],
        name="rerank",
        operation_id="rerank",
        tags=["rerank"],
        summary="Rerank texts against a query (TEI's /rerank)",
        openapi_extra={"requestBody": {"content": {"application/json": {"schema": REQUEST_SCHEMA}}}},
        responses={400: {"description": "no texts"}, 413: {"description": "too many texts or tokens"}},
    )
