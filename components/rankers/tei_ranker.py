"""A reranker that calls a TEI or Cohere/Infinity-shaped rerank server (mxRAG's ``TEIReranker``)."""

import asyncio
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from haystack import Document, component
from haystack.utils import Secret

from components.checks import check_int, check_number, check_query, check_score_threshold, check_top_k
from components.http_limits import (
    LimitedAsyncClient,
    NotJSON,
    ResponseTooLarge,
    UnusableAnswer,
    decode_json,
    run_blocking,
)
from components.rankers.rerank_protocol import RerankServerError, RerankShape, parse_scores, request_body, shape_of
from components.rankers.reranker_base import (
    RerankerMixin,
    Scores,
    check_batch_size,
    check_texts,
    document_texts,
    unique_documents,
)
from components.tei_http import Retries, post_with_retries, refusal

MAX_ANSWER_BYTES = 16 * 1024 * 1024  # one answer: 1,024 scores (with texts, if a server sends them back) stay far below
__all__ = ["TEIRanker", "run_blocking"]  # run_blocking moved to components.http_limits; still importable from here


@component
class TEIRanker(RerankerMixin):
    """
    Reranks documents with a remote rerank server: Hugging Face TEI (``.../rerank``) or a Cohere-shaped API such as
    Infinity (``.../v1/rerank``); the URL's path picks the protocol.

    Texts go out in requests of at most ``max_batch_size`` (TEI refuses more than its ``--max-client-batch-size``,
    32 by default), ``max_concurrency`` requests in flight at once. 429 and 503 answers and connection errors are
    retried with exponential back-off (honouring ``Retry-After``). ``timeout`` is a deadline for each request with
    all its retries and the waits between them, from sending it to the last byte of the last answer: a retry that
    would not fit is not made. An answer may hold at most ``MAX_ANSWER_BYTES`` (``components.http_limits``); a
    redirect is not followed. Every answer is checked: JSON, indexes in range, unique and complete, scores finite
    numbers; a failure raises ``RerankServerError`` with the server's status and message, never an empty result.
    ``run`` and ``run_async`` share one async implementation.

    ```python
    ranker = TEIRanker(url="https://reranker.internal:8080/rerank", ca_file="/etc/pki/ca.pem", top_k=5)
    ranker.run(query="what is a cat?", documents=docs)["documents"]
    ```
    """

    _init_parameters = (
        "url",
        "top_k",
        "batch_size",
        "max_batch_size",
        "max_concurrency",
        "timeout",
        "max_retries",
        "backoff",
        "truncate",
        "model",
        "api_key",
        "ca_file",
        "client_cert",
        "client_key",
        "score_threshold",
    )

    def __init__(
        self,
        url: str,
        *,
        top_k: int = 10,
        batch_size: int = 32,
        max_batch_size: int = 32,
        max_concurrency: int = 4,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        truncate: bool = True,
        model: str | None = None,
        api_key: Secret | None = Secret.from_env_var("TEI_API_KEY", strict=False),
        ca_file: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param url: the rerank endpoint, ``http(s)://host:port/rerank`` (TEI) or ``.../v1/rerank`` (Cohere/Infinity).
        :param top_k: how many documents ``run`` and ``rerank_top_k`` keep, 1..10000 (mxRAG's ``k``).
        :param batch_size: texts per request used by ``run``, 1..1024; never more than ``max_batch_size``.
        :param max_batch_size: the most texts the server takes in one request, 1..1024 (TEI's default is 32).
        :param max_concurrency: requests in flight at once, 1..64.
        :param timeout: seconds for each request with its retries and the waits between them (``Retry-After``
            included), from sending it to the last byte of the answer (a deadline, not per read), (0, 3600].
        :param max_retries: extra attempts after a 429/503 or a connection error, 0..10.
        :param backoff: seconds before the first retry, doubled each time, 0..60.
        :param truncate: ask TEI to truncate pairs longer than the model's limit (instead of refusing them).
        :param model: model name sent in Cohere-shaped requests (Infinity can serve several); None to omit.
        :param api_key: sent as ``Authorization: Bearer``; by default read from ``TEI_API_KEY`` if set.
        :param ca_file: CA bundle (PEM) that signed the server's certificate, for https.
        :param client_cert: client certificate (PEM) for servers that require mutual TLS.
        :param client_key: the client certificate's private key, if not inside ``client_cert``.
        :param score_threshold: drop documents scoring below it, on the server's scale (TEI and Infinity answer a
            one-label reranker's sigmoid, in (0, 1)); None keeps every document.
        :raises ValueError: if a parameter is out of range; the message names it and the range.
        """
        self.shape = shape_of(url)
        self.url = url
        self.top_k = check_top_k(top_k)
        self.score_threshold = check_score_threshold(score_threshold)
        self.batch_size = check_batch_size(batch_size)
        self.max_batch_size = check_int("max_batch_size", max_batch_size, 1, 1024)
        self.max_concurrency = check_int("max_concurrency", max_concurrency, 1, 64)
        self.timeout = check_number("timeout", timeout, 1e-3, 3600)
        self.max_retries = check_int("max_retries", max_retries, 0, 10)
        self.backoff = check_number("backoff", backoff, 0, 60)
        if not isinstance(truncate, bool):
            raise ValueError(f"truncate must be a bool, got {truncate!r}")
        self.truncate = truncate
        if model is not None and (not isinstance(model, str) or not model):
            raise ValueError(f"model must be a non-empty string or None, got {model!r}")
        self.model = model
        if api_key is not None and not isinstance(api_key, Secret):
            raise ValueError(
                "api_key must be a haystack.utils.Secret (e.g. Secret.from_env_var('TEI_API_KEY')) or None"
            )
        self.api_key = api_key
        self._check_tls_options(ca_file, client_cert, client_key)
        self.ca_file, self.client_cert, self.client_key = ca_file, client_cert, client_key
        self._tls: ssl.SSLContext | bool | None = None

    def _check_tls_options(self, ca_file: str | None, client_cert: str | None, client_key: str | None) -> None:
        """TLS files only make sense for https; a key needs its certificate."""
        given = {"ca_file": ca_file, "client_cert": client_cert, "client_key": client_key}
        for name, value in given.items():
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name} must be a file path or None, got {value!r}")
        if not self.url.startswith("https://") and any(given.values()):
            raise ValueError(f"ca_file/client_cert/client_key need an https:// url, got {self.url!r}")
        if client_key and not client_cert:
            raise ValueError("client_key was given without client_cert")

    def warm_up(self) -> None:
        """Build the TLS context once (reading the CA and client certificate files)."""
        self._tls_settings()

    def _tls_settings(self) -> ssl.SSLContext | bool:
        """httpx's ``verify`` for every request: True (system CAs), or our context; built on first use."""
        if self._tls is None:
            self._tls = self._build_tls()
        return self._tls

    def _build_tls(self) -> ssl.SSLContext | bool:
        """True without CA or client certificate, else a context from those files (each checked first)."""
        if not (self.ca_file or self.client_cert):
            return True
        for name in ("ca_file", "client_cert", "client_key"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ValueError(f"{name} {path!r} does not exist or is not a file")
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.client_cert:
            context.load_cert_chain(self.client_cert, self.client_key)
        return context

    def _client(self) -> httpx.AsyncClient:
        """A client for one call: auth header, TLS settings, a pool as wide as ``max_concurrency``, and the
        deadline and size limit of every request."""
        verify = self._tls_settings()
        headers: dict[str, str] = {}
        key = self.api_key.resolve_value() if self.api_key else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=self.max_concurrency)
        return LimitedAsyncClient(
            deadline_s=self.timeout, max_bytes=MAX_ANSWER_BYTES, verify=verify, headers=headers, limits=limits
        )

    def rerank(self, query: str, texts: list[str], batch_size: int = 32) -> Scores:
        """Score each text against the query (mxRAG's call); float32 scores in input order."""
        return run_blocking(self.rerank_async(query, texts, batch_size))

    async def rerank_async(self, query: str, texts: list[str], batch_size: int = 32) -> Scores:
        """
        Score each text against the query, in requests of at most ``min(batch_size, max_batch_size)`` texts.

        :returns: float32 scores, one per text, in input order.
        :raises ValueError: if the query, the texts or ``batch_size`` are out of mxRAG's ranges.
        :raises RerankServerError: if any request fails after retries or any answer is malformed.
        """
        check_query(query)
        texts = check_texts(texts)
        size = min(check_batch_size(batch_size), self.max_batch_size)
        scores = np.empty(len(texts), dtype=np.float32)
        in_flight = asyncio.Semaphore(self.max_concurrency)
        async with self._client() as client:
            try:
                async with asyncio.TaskGroup() as group:
                    for start in range(0, len(texts), size):
                        chunk = texts[start : start + size]
                        group.create_task(self._score_chunk(client, in_flight, query, chunk, scores, start))
            except BaseExceptionGroup as failures:
                raise failures.exceptions[0] from None
        return scores

    async def _score_chunk(
        self,
        client: httpx.AsyncClient,
        in_flight: asyncio.Semaphore,
        query: str,
        chunk: list[str],
        scores: Scores,
        start: int,
    ) -> None:
        """Score one request's worth of texts and write the scores at ``start``."""
        async with in_flight:
            body = await self._post(client, request_body(self.shape, query, chunk, self.truncate, self.model), chunk)
        try:
            scores[start : start + len(chunk)] = parse_scores(self.shape, body, len(chunk))
        except (ValueError, RecursionError) as exc:
            raise RerankServerError(self._not_format(exc), status=200) from None

    def _not_format(self, problem: object) -> str:
        """``<url> answered HTTP 200, but the answer is not the TEI rerank format: <problem>`` (or Cohere's)."""
        name = "TEI" if self.shape is RerankShape.TEI else "Cohere"
        return f"{self.url} answered HTTP 200, but the answer is not the {name} rerank format: {problem}"

    async def _post(self, client: httpx.AsyncClient, payload: dict[str, Any], chunk: list[str]) -> Any:
        """POST with retries on 429/503 (honouring ``Retry-After``) and connection errors other than TLS failures,
        all within ``timeout``; the JSON of a 200 answer."""
        retries = Retries(self.timeout, self.max_retries, self.backoff, retry_after=True, tls_final=True)
        return self._json(await post_with_retries(client, self.url, payload, retries, _Words(self.url, len(chunk))))

    def _json(self, response: httpx.Response) -> Any:
        """The body of a 200 answer as JSON, or an error quoting what came instead (deep nesting included)."""
        try:
            return decode_json(response.content)
        except NotJSON as exc:
            raise RerankServerError(self._not_format(exc), status=200) from None

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, documents: list[Document], top_k: int | None = None, score_threshold: float | None = None
    ) -> dict[str, list[Document]]:
        """Async twin of ``run``, with the same parameters and output."""
        check_query(query)
        top_k = self._resolve_top_k(top_k)
        threshold = self._resolve_threshold(score_threshold)
        if not documents:
            return {"documents": []}
        unique = unique_documents(documents)
        scores = await self.rerank_async(query, document_texts(unique), self.batch_size)
        return {"documents": self._ranked_documents(unique, scores, top_k, threshold)}


@dataclass(frozen=True)
class _Words:
    """The ranker's words for the failures of one request of N_TEXTS to URL (``tei_http.Wording``)."""

    url: str
    n_texts: int

    def unusable(self, exc: UnusableAnswer) -> RerankServerError:
        """Too large (``<url> sent too much``), a redirect, undecodable; with the answer's status."""
        if isinstance(exc, ResponseTooLarge):
            return RerankServerError(f"{self.url} sent too much: {exc}", status=exc.status)
        return RerankServerError(str(exc), status=exc.status)

    def unreachable(self, exc: Exception, attempt: int) -> RerankServerError:
        """``could not reach <url> after K attempt(s): <error>``."""
        return RerankServerError(
            f"could not reach {self.url} after {attempt + 1} attempt(s): {type(exc).__name__}: {exc}"
        )

    def refused(self, response: httpx.Response, attempt: int) -> RerankServerError:
        """The status and the server's message, with the status."""
        return RerankServerError(refusal(self.url, response, self.n_texts, attempt), status=response.status_code)

    def out_of_time(self, error: RerankServerError, why: str) -> RerankServerError:
        """The last failure, and why no retry follows."""
        return RerankServerError(f"{error}; {why}", error.status)
