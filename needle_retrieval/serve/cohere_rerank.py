"""The Cohere/Jina/Infinity-style rerank body and answer that `needle serve --reranker DIR` also speaks.

``POST /v1/rerank`` (and ``POST /rerank`` when the body has ``documents`` and no ``texts``) takes ``{"model"?,
"query", "documents": [text | {"text": text}], "top_n"?, "return_documents"=true}`` and answers ``{"model",
"results": [{"index", "relevance_score", "document"?: {"text"}}]}``: the ``top_n`` best documents (all without it),
best first, ties in input order, as Cohere's v1, Jina's and vLLM's rerank APIs answer. This is what UltraRAG's
reranker server posts with its ``openai`` backend (``{model, query, documents, top_n}`` to its ``base_url``,
verbatim): it reads each result's ``document``, as a string or as an object's ``text``, so documents come back unless
``return_documents`` is false (Jina's and vLLM's default; Infinity's and Cohere's is false).

``model`` is accepted and ignored (one model is served; the answer names it). Scores are the sigmoid of the
cross-encoder's logits, 0 to 1 as Cohere's ``relevance_score``. Every (query, document) pair is cut to the model's
token limit, longest first on the right, as these APIs (and UltraRAG's local backends) truncate silently.

This module holds the body's model and the answer; ``needle_retrieval.serve.rerank`` checks, scores and routes.
Unknown fields are ignored and the fields' types are strict, as on TEI's route.
"""

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from components.rankers.reranker_base import TEXT_MAX_CHARS, Scores
from needle_retrieval.serve.answers import QUERY_SCHEMA, integral

TEXT_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": TEXT_MAX_CHARS}


class CohereDocument(BaseModel):
    """A document as an object (Cohere's v1 and Jina's form): its ``text``; other fields are ignored."""

    model_config = ConfigDict(strict=True)
    text: str


class CohereRerankRequest(BaseModel):
    """The Cohere/Jina/Infinity rerank body; the documents a request may hold are added per server (``schema``).

    As on TEI's route, the schema says what ``RerankService.check`` enforces (a query as ``/search`` takes it, 1 or
    more texts of 1 to 1 MiB characters), so that its refusals name the document (``documents[3]``)."""

    model_config = ConfigDict(strict=True)
    model: str | None = Field(default=None, description="accepted and ignored: this server serves one model")
    query: str = Field(json_schema_extra=QUERY_SCHEMA)
    documents: list[str | CohereDocument] = Field(
        description="the texts to rank, as strings or as {text} objects",
        json_schema_extra={
            "minItems": 1,
            "items": {
                "anyOf": [
                    TEXT_SCHEMA,
                    {"type": "object", "properties": {"text": TEXT_SCHEMA}, "required": ["text"], "title": "Document"},
                ]
            },
        },
    )
    top_n: Annotated[int, Field(ge=1), BeforeValidator(integral)] | None = Field(
        default=None, description="how many of the best to answer (default: all)"
    )
    return_documents: bool = Field(default=True, description="whether each result carries its document's text")

    def texts(self) -> list[str]:
        """The documents' texts, in request order."""
        return [doc if isinstance(doc, str) else doc.text for doc in self.documents]


class CohereText(BaseModel):
    """A returned document: its text."""

    text: str


class CohereResult(BaseModel):
    """One ranked document: its position in the request, its score and (unless ``return_documents`` is false) its
    text."""

    index: int
    relevance_score: float
    document: CohereText | None = Field(default=None, description="absent with return_documents false")


class CohereRerankResponse(BaseModel):
    """The rerank answer of Cohere's v1, Jina's and vLLM's APIs: the served model and the results, best first."""

    model: str
    results: list[CohereResult]


def request_schema(max_batch: int, without_texts: bool = False) -> dict[str, Any]:
    """The JSON schema of a body on a server that takes at most MAX_BATCH documents a request; WITHOUT_TEXTS: one
    that has no ``texts`` field (on ``/rerank``, a body with ``texts`` is TEI's)."""
    schema = CohereRerankRequest.model_json_schema()
    schema.pop("$defs", None)  # CohereDocument's, which "items" above replaces
    schema["properties"]["documents"]["maxItems"] = max_batch
    if without_texts:
        schema["not"] = {"required": ["texts"]}
    return schema


def is_cohere(body: Any) -> bool:
    """Whether a decoded ``/rerank`` body is Cohere's (``documents``, no ``texts``) rather than TEI's."""
    return isinstance(body, dict) and "documents" in body and "texts" not in body


def answer(request: CohereRerankRequest, texts: list[str], scores: Scores, model: str) -> dict[str, Any]:
    """The ``top_n`` best of TEXTS by SCORES (all without it), best first, ties in input order."""
    order = sorted(range(len(texts)), key=lambda i: -float(scores[i]))[: request.top_n]
    results: list[dict[str, Any]] = []
    for i in order:
        result: dict[str, Any] = {"index": i, "relevance_score": float(scores[i])}
        if request.return_documents:
            result["document"] = {"text": texts[i]}
        results.append(result)
    return {"model": model, "results": results}
