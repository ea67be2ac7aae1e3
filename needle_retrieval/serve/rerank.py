"""TEI's rerank API on `needle serve --reranker DIR`: ``POST /rerank``, ``GET /info`` and ``GET /health``, and
the Cohere/Jina/Infinity-style ``POST /v1/rerank`` beside it.

The routes answer as text-embeddings-inference (TEI) does, so TEI clients (Haystack's ``HuggingFaceTEIRanker``,
``tei-client``, our ``TEIRanker``) work unchanged; scoring is a local cross-encoder (``LocalCrossEncoderRanker``).
``POST /v1/rerank`` takes and answers the Cohere-style shape (``needle_retrieval.serve.cohere_rerank``) that
UltraRAG's reranker client posts, and so does ``POST /rerank`` for a body with ``documents`` and no ``texts`` (a
client whose URL ends in ``/rerank``); both have TEI's limits and error shape below.

``POST /rerank`` takes ``{"query", "texts", "truncate"?, "truncation_direction"="right", "raw_scores"=false,
"return_text"=false}`` and answers ``[{"index", "score", "text"?}]``, best first (ties by index). Like TEI it
accepts ``truncation_direction`` as ``left``, ``right``, ``Left`` or ``Right`` (Haystack's client sends ``"Right"``)
and ``truncate: null``, ignores unknown fields, and refuses ``null`` for the other fields. Scores are the model's
logits with ``raw_scores``, else their sigmoid, as TEI gives for a one-label model.

Truncation is TEI's: with ``truncate`` true, each (query, text) pair is cut to the model's limit by the longest
first, on the requested side, and ranked. ``truncate`` null or absent means the server's ``auto_truncate`` (false,
TEI's default up to 1.8, shown in ``/info``). Without truncation a pair over the limit is refused, as TEI does, with
413 ``validation`` "`inputs` must have less than N tokens. Given: M" (TEI 1.9 moved this status to 422).

Errors are TEI's ``{"error", "error_type"}``, on one line: 400 ``empty`` for no texts (or documents), 413
``validation`` for more texts than the batch limit (``--reranker-max-batch``, 32 like TEI's
``--max-client-batch-size``) or a pair over the token limit, 422 ``validation`` for a malformed body or bad text,
424 ``backend`` when the model fails (details only in the server log).

``GET /info`` answers TEI's ``Info`` object with the limits above, ``GET /health`` 200 once the model is loaded and
probed (``needle_retrieval.serve.tei_info``). The model directory passes mxRAG's checks (``LocalCrossEncoderRanker``).
"""

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from hayhooks.server.logger import log
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from transformers import AutoTokenizer

from components.checks import check_int, check_query, check_unicode
from components.rankers.local_cross_encoder_ranker import LocalCrossEncoderRanker
from components.rankers.reranker_base import TEXT_MAX_CHARS, TEXTS_MAX_COUNT, Scores
from needle_retrieval.errors import NeedleError, one_line
from needle_retrieval.serve import cohere_rerank as cohere
from needle_retrieval.serve.answers import QUERY_SCHEMA, ErrorAnswer
from needle_retrieval.serve.pipelines import root_cause
from needle_retrieval.serve.run import validation_message
from needle_retrieval.serve.tei_info import info_routes, tei_info

DEFAULT_MAX_BATCH = 32  # TEI's --max-client-batch-size default
SCORING_BATCH = 32  # pairs per forward pass
TEXT_SCHEMA = {"minLength": 1, "maxLength": TEXT_MAX_CHARS}
TruncationDirection = Literal["left", "right", "Left", "Right"]  # TEI's enum and its lower-case aliases
Body = TypeVar("Body", bound=BaseModel)


class TEIRerankRequest(BaseModel):
    """TEI's rerank body; like TEI, unknown fields are ignored and ``truncate`` alone may be null.

    The schema says what ``RerankService.check`` enforces (a query as ``/search`` takes it, 1 or more texts of 1 to
    1 MiB characters); the number of texts a request may hold is added per server (``request_schema``)."""

    model_config = ConfigDict(strict=True)
    query: str = Field(json_schema_extra=QUERY_SCHEMA)
    texts: list[str] = Field(json_schema_extra={"minItems": 1, "items": {"type": "string", **TEXT_SCHEMA}})
    truncate: bool | None = None
    truncation_direction: TruncationDirection = "right"
    raw_scores: bool = False
    return_text: bool = False


class TEIRank(BaseModel):
    """One entry of TEI's rerank answer: the text's position in the request, its score, and its text if asked."""

    index: int
    score: float
    text: str | None = Field(default=None, description="with return_text only")


class TEIErrorAnswer(BaseModel):
    """TEI's error shape."""

    error: str
    error_type: str


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

    def __init__(self, model_dir: str, max_batch: int = DEFAULT_MAX_BATCH, auto_truncate: bool = False) -> None:
        """Check, load and probe the model; a NeedleError naming MODEL_DIR if any step fails.

        ``auto_truncate`` is TEI's ``--auto-truncate``: whether a request without ``truncate`` is truncated.
        """
        self.max_batch = check_int("--reranker-max-batch", max_batch, 1, TEXTS_MAX_COUNT)
        self.auto_truncate = auto_truncate
        self._lock = threading.Lock()
        try:
            self.ranker = LocalCrossEncoderRanker(model_path=model_dir, use_fp16=False, batch_size=SCORING_BATCH)
            self.ranker.warm_up()  # mxRAG's directory checks run here, before anything is loaded
            self._tokenizer = AutoTokenizer.from_pretrained(self.ranker.model_path, local_files_only=True)
            self.ranker.rerank("needle serve start-up probe", ["probe"])
            self.info = tei_info(self.ranker, Path(model_dir).name, SCORING_BATCH, self.max_batch, auto_truncate)
        except Exception as error:
            raise NeedleError(f"--reranker {model_dir} failed to load: {one_line(root_cause(error))}") from error

    def check(self, query: str, texts: list[str], field: str = "texts") -> None:
        """TEI's refusals, in TEI's order: no texts, too many texts, then our input checks (a query as ``/search``
        takes it, texts of 1 to 1 MiB characters of valid Unicode); FIELD is what the body calls the texts."""
        if not texts:
            raise TEIError(400, f"`{field}` cannot be empty", "empty")
        if len(texts) > self.max_batch:
            raise TEIError(413, f"batch size {len(texts)} > maximum allowed batch size {self.max_batch}", "validation")
        try:
            check_query(query)
            for i, text in enumerate(texts):
                where = f"{field}[{i}]"
                if not 1 <= len(text) <= TEXT_MAX_CHARS:
                    raise ValueError(f"{where} length must be in [1, {TEXT_MAX_CHARS}] characters, got {len(text)}")
                check_unicode(text, where)
        except ValueError as error:
            raise TEIError(422, one_line(error), "validation") from error

    def truncates(self, request: TEIRerankRequest) -> bool:
        """TEI's rule: the request's ``truncate``, or the server's ``auto_truncate`` when it is null or absent."""
        return self.auto_truncate if request.truncate is None else request.truncate

    def _too_long(self, query: str, texts: list[str]) -> None:
        """413 for the first pair over the model's token limit (when the request does not truncate)."""
        lengths = [len(ids) for ids in self._tokenizer([query] * len(texts), texts)["input_ids"]]
        for i, length in enumerate(lengths):
            if length > self.ranker.max_tokens:
                message = f"`inputs` must have less than {self.ranker.max_tokens} tokens. Given: {length} (texts[{i}])"
                raise TEIError(413, message, "validation")

    @contextlib.contextmanager
    def _cutting(self, direction: TruncationDirection) -> Iterator[None]:
        """The ranker's tokenizer truncates on DIRECTION's side meanwhile (the ranker has no setting for it).

        The ranker truncates longest first to its limit, as TEI does; only the side is ours to choose. The caller
        holds the lock, so no other request sees the side changed.
        """
        tokenizer = self.ranker._tokenizer
        tokenizer.truncation_side = direction.lower()
        try:
            yield
        finally:
            tokenizer.truncation_side = "right"

    def score(self, request: TEIRerankRequest) -> Scores:
        """Scores in input order: logits, or their sigmoid unless ``raw_scores``."""
        with self._lock:
            if not self.truncates(request):
                self._too_long(request.query, request.texts)
            with self._cutting(request.truncation_direction):
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


async def decoded(request: Request) -> Any:
    """The body as JSON, or a 422 ``validation`` error saying why it is not."""
    try:
        return json.loads(await request.body())
    except (ValueError, RecursionError) as error:  # invalid JSON or UTF-8, nesting too deep
        raise TEIError(422, f"Failed to parse the request body as JSON: {one_line(error)}", "validation") from error


def validated(model: type[Body], data: Any) -> Body:
    """DATA as MODEL, or a 422 ``validation`` error saying what is wrong with it."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        message = f"Failed to deserialize the JSON body: {validation_message(error)}"
        raise TEIError(422, message, "validation") from error


async def tei_answer(service: RerankService, data: Any) -> list[dict[str, Any]]:
    """TEI's answer to the decoded body DATA: every text ranked (``ranked``), after TEI's checks."""
    body = validated(TEIRerankRequest, data)
    service.check(body.query, body.texts)
    return ranked(body, await run_in_threadpool(service.score, body))


async def cohere_answer(service: RerankService, data: Any) -> dict[str, Any]:
    """The Cohere-style answer to the decoded body DATA, after the checks TEI's body gets; every pair truncated."""
    body = validated(cohere.CohereRerankRequest, data)
    texts = body.texts()
    service.check(body.query, texts, "documents")
    scoring = TEIRerankRequest.model_construct(
        query=body.query, texts=texts, truncate=True, truncation_direction="right", raw_scores=False, return_text=False
    )
    scores = await run_in_threadpool(service.score, scoring)
    return cohere.answer(body, texts, scores, service.info.served_model_name)


async def answered(request: Request, service: RerankService, cohere_only: bool) -> JSONResponse:
    """The answer to a rerank request: Cohere's shape for COHERE_ONLY or a Cohere body (``cohere.is_cohere``), else
    TEI's; a refusal in TEI's error shape, a failure of the model a 424 (details in the server log only)."""
    try:
        data = await decoded(request)
        if cohere_only or cohere.is_cohere(data):
            return JSONResponse(await cohere_answer(service, data))
        return JSONResponse(await tei_answer(service, data))
    except TEIError as error:
        return error.response()
    except Exception as error:
        log.opt(exception=error).error("rerank failed: {}", one_line(root_cause(error)))
        return TEIError(424, "the reranker failed; the server log has the details", "backend").response()


def request_schema(max_batch: int) -> dict[str, Any]:
    """The JSON schema of a TEI ``/rerank`` body on a server that takes at most MAX_BATCH texts a request."""
    schema = TEIRerankRequest.model_json_schema()
    schema["properties"]["texts"]["maxItems"] = max_batch
    return schema


def body_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``openapi_extra`` for a route that reads its JSON body itself, against SCHEMA."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


RERANK_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": TEIErrorAnswer, "description": "no texts (or documents)"},
    413: {
        "model": TEIErrorAnswer | ErrorAnswer,
        "description": "more texts than the batch limit, a pair over the token limit, or a body over the size limit",
    },
    422: {"model": TEIErrorAnswer, "description": "the body is not JSON or does not fit the schema, or a bad text"},
    424: {"model": TEIErrorAnswer, "description": "the model failed (the server log has the details)"},
}


def rerank_route(app: FastAPI, service: RerankService) -> None:
    """Add TEI's ``POST /rerank`` (which takes the Cohere-style body too), the Cohere-style ``POST /v1/rerank``,
    ``GET /info`` and ``GET /health``."""

    async def rerank(request: Request) -> JSONResponse:
        return await answered(request, service, cohere_only=False)

    async def v1_rerank(request: Request) -> JSONResponse:
        return await answered(request, service, cohere_only=True)

    either = {"anyOf": [request_schema(service.max_batch), cohere.request_schema(service.max_batch, True)]}
    app.add_api_route(
        "/rerank",
        rerank,
        methods=["POST"],
        name="rerank",
        operation_id="rerank",
        tags=["rerank"],
        summary="Rerank texts against a query (TEI's /rerank; a body with documents, no texts: as /v1/rerank)",
        openapi_extra=body_schema(either),
        response_model=list[TEIRank] | cohere.CohereRerankResponse,
        responses=RERANK_ERRORS,
    )
    app.add_api_route(
        "/v1/rerank",
        v1_rerank,
        methods=["POST"],
        name="v1_rerank",
        operation_id="v1_rerank",
        tags=["rerank"],
        summary="Rerank documents against a query (the Cohere, Jina and Infinity shape; UltraRAG's openai backend)",
        openapi_extra=body_schema(cohere.request_schema(service.max_batch)),
        response_model=cohere.CohereRerankResponse,
        responses=RERANK_ERRORS,
    )
    info_routes(app, service.info)
