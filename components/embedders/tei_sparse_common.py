"""A client of TEI's ``/embed_sparse`` route (text-embeddings-inference serving a SPLADE model), shared by the
TEI sparse embedders.

TEI's wire protocol: ``POST <url>/embed_sparse`` with ``{"inputs": [text, ...], "truncate": bool}`` answers one
list per input of ``{"index": term id, "value": weight}`` entries (the model's non-zero vocabulary terms); a model
that is not a SPLADE model answers 424, more inputs than the server's ``--max-client-batch-size`` (32 by default)
413, an overloaded server 429 and a loading one 503, each as ``{"error", "error_type"}``.

Texts go out ``batch_size`` at a time, one request after another; 429, 503 and connection errors are retried with
exponential back-off, all within ``timeout`` per request. Every answer is checked (one list per input, entries of a
term id in [0, 2**31 - 1) and a finite weight, no term twice, at most ``MAX_TERMS`` terms) and limited in size
(``components.http_limits``); a failure raises ``TEISparseError`` naming the URL, the status and the server's
message, never an empty vector.
"""

import math
from dataclasses import dataclass
from typing import Any

import httpx
from haystack import default_from_dict, default_to_dict
from haystack.dataclasses import SparseEmbedding
from haystack.utils import Secret, deserialize_secrets_inplace

from components.checks import check_int, check_number, run_instruction
from components.http_limits import LimitedAsyncClient, NotJSON, UnusableAnswer, decode_json, run_blocking
from components.tei_http import Retries, post_with_retries, refusal

MAX_TERMS = 65_536
"""Most terms one vector may hold: a SPLADE vector activates tens to hundreds of a vocabulary's 30,000-250,000
terms, so more is an answer gone wrong that would bloat the index (and every search touching it)."""
MAX_TERM_ID = 2**31 - 1
"""Term ids must stay below it: the sparse store keeps them as int32 (``components.stores.sparse.vectors``)."""
MAX_ANSWER_BYTES = 64 * 1024 * 1024  # 32 texts of a few thousand terms each, as JSON, stay far below


class TEISparseError(RuntimeError):
    """The server failed, or answered what TEI's ``/embed_sparse`` never answers."""


def parse_answer(body: Any, n_texts: int) -> list[SparseEmbedding]:
    """The vectors of one ``/embed_sparse`` answer for N_TEXTS inputs; ValueError saying what is not TEI's format."""
    if not isinstance(body, list) or len(body) != n_texts:
        raise ValueError(f"expected a list of {n_texts} vectors, got {type(body).__name__} of {_length(body)}")
    vectors = []
    for i, entries in enumerate(body):
        if not isinstance(entries, list):
            raise ValueError(f"vector {i} is not a list of {{index, value}} entries")
        if len(entries) > MAX_TERMS:
            raise ValueError(f"vector {i} has {len(entries)} terms, more than the {MAX_TERMS} a sparse vector may hold")
        indices, values = [], []
        for entry in entries:
            index = entry.get("index") if isinstance(entry, dict) else None
            value = entry.get("value") if isinstance(entry, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < MAX_TERM_ID:
                raise ValueError(f"vector {i} has an entry without a term id in [0, {MAX_TERM_ID}): {str(entry)[:80]}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"vector {i} has an entry without a finite value: {str(entry)[:80]}")
            indices.append(index)
            values.append(float(value))
        if len(set(indices)) != len(indices):
            raise ValueError(f"vector {i} lists a term id twice")
        vectors.append(SparseEmbedding(indices=indices, values=values))
    return vectors


def _length(body: Any) -> str:
    """How long BODY is, for a message."""
    return str(len(body)) if isinstance(body, list) else "-"


class TEISparseClient:
    """Init options, serialization and requests of the TEI sparse embedders; each adds its own ``run``."""

    def __init__(
        self,
        url: str,
        *,
        batch_size: int = 32,
        truncate: bool = True,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        api_key: Secret | None = Secret.from_env_var("TEI_API_KEY", strict=False),
    ) -> None:
        """
        :param url: The TEI server, ``http(s)://host:port`` (``/embed_sparse`` is added unless the URL ends with it).
        :param batch_size: Texts per request, 1..1024; at most the server's ``--max-client-batch-size`` (32 default).
        :param truncate: Ask TEI to truncate texts longer than the model's limit (instead of refusing them).
        :param timeout: Seconds for each request with its retries and the waits between them, (0, 3600].
        :param max_retries: Extra attempts after a 429/503 or a connection error, 0..10.
        :param backoff: Seconds before the first retry, doubled each time, 0..60.
        :param api_key: Sent as ``Authorization: Bearer``; by default read from ``TEI_API_KEY`` if set.
        :raises ValueError: A parameter out of range; the message names it and the range.
        """
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http:// or https:// address of a TEI server, got {url!r}")
        if not isinstance(truncate, bool):
            raise ValueError(f"truncate must be true or false, got {truncate!r}")
        if api_key is not None and not isinstance(api_key, Secret):
            raise ValueError(
                "api_key must be a haystack.utils.Secret (e.g. Secret.from_env_var('TEI_API_KEY')) or None"
            )
        self.url = url
        self.batch_size = check_int("batch_size", batch_size, 1, 1024)
        self.truncate = truncate
        self.timeout = check_number("timeout", timeout, 1e-3, 3600)
        self.max_retries = check_int("max_retries", max_retries, 0, 10)
        self.backoff = check_number("backoff", backoff, 0, 60)
        self.api_key = api_key
        self._endpoint = (
            url.rstrip("/") if url.rstrip("/").endswith("/embed_sparse") else f"{url.rstrip('/')}/embed_sparse"
        )

    def _init_parameters(self) -> dict[str, Any]:
        """The init parameters this base holds (the key as an environment-variable reference)."""
        return {
            "url": self.url,
            "batch_size": self.batch_size,
            "truncate": self.truncate,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "backoff": self.backoff,
            "api_key": self.api_key.to_dict() if self.api_key else None,
        }

    def _extra_parameters(self) -> dict[str, Any]:
        """The init parameters a subclass adds (each also an attribute)."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component; a key given as a plain token refuses to be written (Haystack's rule)."""
        return default_to_dict(self, **self._init_parameters(), **self._extra_parameters())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Rebuild the component from ``to_dict`` output."""
        deserialize_secrets_inplace(data.get("init_parameters", {}), keys=["api_key"])
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Nothing to load: the model lives on the server."""

    def _embed(self, texts: list[str]) -> list[SparseEmbedding]:
        """The vectors of TEXTS, in order, in requests of ``batch_size``."""
        return run_blocking(self._embed_async(texts)) if texts else []

    async def _embed_async(self, texts: list[str]) -> list[SparseEmbedding]:
        """Async ``_embed``."""
        key = self.api_key.resolve_value() if self.api_key else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        vectors: list[SparseEmbedding] = []
        async with LimitedAsyncClient(deadline_s=self.timeout, max_bytes=MAX_ANSWER_BYTES, headers=headers) as client:
            for start in range(0, len(texts), self.batch_size):
                chunk = texts[start : start + self.batch_size]
                body = await self._post(client, {"inputs": chunk, "truncate": self.truncate}, len(chunk))
                try:
                    vectors.extend(parse_answer(body, len(chunk)))
                except ValueError as exc:
                    raise TEISparseError(
                        f"{self._endpoint} answered HTTP 200, but not in TEI's /embed_sparse format: {exc}"
                    ) from None
        return vectors

    async def _post(self, client: httpx.AsyncClient, payload: dict[str, Any], n_texts: int) -> Any:
        """POST with retries on 429/503 and connection errors, all within ``timeout``; the JSON of a 200 answer."""
        retries = Retries(self.timeout, self.max_retries, self.backoff)
        response = await post_with_retries(client, self._endpoint, payload, retries, _Words(self._endpoint, n_texts))
        try:
            return decode_json(response.content)
        except NotJSON as exc:
            raise TEISparseError(f"{self._endpoint} answered HTTP 200, but the answer is {exc}") from None


@dataclass(frozen=True)
class _Words:
    """The sparse client's words for the failures of one request of N_TEXTS to ENDPOINT (``tei_http.Wording``)."""

    endpoint: str
    n_texts: int

    def unusable(self, exc: UnusableAnswer) -> TEISparseError:
        """Too large, a redirect, undecodable: the limit's own message."""
        return TEISparseError(str(exc))

    def unreachable(self, exc: Exception, attempt: int) -> TEISparseError:
        """``could not reach <endpoint> (attempt K): <error>``."""
        return TEISparseError(f"could not reach {self.endpoint} (attempt {attempt + 1}): {type(exc).__name__}: {exc}")

    def refused(self, response: httpx.Response, attempt: int) -> TEISparseError:
        """The status and the server's message."""
        return TEISparseError(refusal(self.endpoint, response, self.n_texts, attempt))

    def out_of_time(self, error: TEISparseError, why: str) -> TEISparseError:
        """The last failure as it is."""
        return error


class TEISparseQueryBase(TEISparseClient):
    """``query_instruction`` on top of the client (an init default that a run may replace)."""

    def __init__(self, url: str, *, query_instruction: str = "", **kwargs: Any) -> None:
        """:param query_instruction: Text put before every query; a run's ``query_instruction`` replaces it.
        Other parameters: see ``TEISparseClient``."""
        if not isinstance(query_instruction, str):
            raise ValueError(f"query_instruction must be a string, got {query_instruction!r}")
        TEISparseClient.__init__(self, url, **kwargs)  # @component rebuilds the class: no zero-argument super()
        self.query_instruction = query_instruction

    def _extra_parameters(self) -> dict[str, Any]:
        """``query_instruction``."""
        return {"query_instruction": self.query_instruction}

    def _queries(self, texts: list[str], query_instruction: str | None) -> list[SparseEmbedding]:
        """The vectors of TEXTS as queries, with the run's instruction (None: the init one; ``""``: none)."""
        instruction = run_instruction(self.query_instruction, query_instruction)
        return self._embed([instruction + t for t in texts])
