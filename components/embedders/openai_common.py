"""What our OpenAI-compatible embedders share: options, the SDK clients, batching, concurrency and retries.

Haystack's `OpenAITextEmbedder` / `OpenAIDocumentEmbedder` send one batch after another, leave retries to the
SDK (its own back-off schedule, which a component cannot set) and trust whatever a 200 answer holds. UltraRAG's
`openai` backend keeps several batches in flight under a `concurrency` limit; that is what this base does, with
the official `openai` SDK pointed at `base_url`:

* texts go out in requests of `batch_size`, at most `concurrency` at once, and come back as one matrix in input
  order whatever order the requests finish in;
* every request has a deadline from sending it to the last byte of its answer, retries and the waits between them
  included (`timeout`; the SDK's own timeout bounds each read only, so a server that trickles bytes could stretch
  it without end), an answer may hold at most `MAX_ANSWER_BYTES_PER_INPUT` per text plus 1 MiB, and a redirect
  is not followed: the SDK is handed a `LimitedAsyncClient` (`components.http_limits`). `run` is `run_async` on a
  private event loop with a client of its own, so both paths have the same bounds (a blocking read cannot be
  interrupted at a deadline);
* timeouts, lost connections, 408/409/429 and 5xx are retried `max_retries` times, waiting `backoff * 2**n`
  seconds (longer if the server's `Retry-After` says so) while the wait still fits in `timeout`; anything else
  fails at once with the server's own message (see `openai_protocol`), and so does every answer that does not
  hold one vector per input;
* the API key is a Haystack `Secret`, by default the first of `OPENAI_API_KEY` / `RETRIEVER_API_KEY` that is
  set; a self-hosted server (`base_url` given) may need none.

The async client is built in `warm_up_async` (idempotent; rebuilt when it belongs to another event loop) and
released in `close_async`; `warm_up` checks the options and `close` has nothing to release (each sync run opens
and closes its own client).
"""

import asyncio
import os
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, Self

import numpy as np
import openai
from haystack import default_from_dict, default_to_dict
from haystack.utils import Secret

from components.checks import check_base_url, check_int, check_number
from components.embedders.openai_protocol import (
    Matrix,
    OpenAIEmbeddingError,
    failure,
    is_retryable,
    parse_embeddings,
    retry_delay,
    unusable,
)
from components.http_limits import CallDeadline, LimitedAsyncClient, UnusableAnswer, run_blocking

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_API_KEY = Secret.from_env_var(["OPENAI_API_KEY", "RETRIEVER_API_KEY"], strict=False)
MAX_BATCH_SIZE = 2048  # OpenAI's limit on inputs per request
PLACEHOLDER_KEY = "none"  # the SDK insists on a key; a self-hosted server without auth ignores this one
# JSON floats take ~20 bytes each: a 4,096-wide vector is ~85 KB; 128 KiB per input leaves room for wider ones.
MAX_ANSWER_BYTES_PER_INPUT = 128 * 1024
Meta = dict[str, Any]


def check_string(name: str, value: Any, *, empty: bool = True) -> str:
    """A string (non-empty unless `empty`); the error names the parameter."""
    if not isinstance(value, str) or (not empty and not value):
        raise ValueError(f"{name} must be a {'' if empty else 'non-empty '}string, got {value!r}")
    return value


class OpenAIEmbedderBase:
    """Options, clients and request machinery of our OpenAI-compatible embedders.

    A subclass calls `_configure` from its `__init__`, lists its init parameters in `_init_parameters` (that
    is what `to_dict` writes), and adds `run` / `run_async` on top of `_embed` / `_embed_async`.
    """

    _init_parameters: ClassVar[tuple[str, ...]]
    async_client: openai.AsyncOpenAI | None

    def _configure(
        self,
        *,
        model_name: str,
        base_url: str | None,
        api_key: Secret | None,
        dimensions: int | None,
        prefix: str,
        suffix: str,
        timeout: float,
        max_retries: int,
        backoff: float,
        batch_size: int = 1,
        concurrency: int = 1,
    ) -> None:
        """Check and keep the options shared by all three embedders.

        :raises ValueError: An option outside its allowed range; the message names it and the range.
        """
        self.model_name = check_string("model_name", model_name, empty=False)
        self.base_url = check_base_url(base_url)
        if api_key is not None and not isinstance(api_key, Secret):
            raise ValueError("api_key must be a haystack.utils.Secret (e.g. Secret.from_env_var('OPENAI_API_KEY'))")
        self.api_key = api_key
        self.dimensions = None if dimensions is None else check_int("dimensions", dimensions, 1, 65536)
        self.prefix = check_string("prefix", prefix)
        self.suffix = check_string("suffix", suffix)
        self.timeout = check_number("timeout", timeout, 0, 3600, low_open=True)
        self.max_retries = check_int("max_retries", max_retries, 0, 10)
        self.backoff = check_number("backoff", backoff, 0, 60)
        self.batch_size = check_int("batch_size", batch_size, 1, MAX_BATCH_SIZE)
        self.concurrency = check_int("concurrency", concurrency, 1, 64)
        self.async_client = None
        self._async_loop: weakref.ReferenceType[asyncio.AbstractEventLoop] | None = None
        self._key_missing = False

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component; the API key stays a reference to its environment variables."""
        return default_to_dict(self, **{name: getattr(self, name) for name in self._init_parameters})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild the component from `to_dict` output (the key is read from the environment again)."""
        return default_from_dict(cls, data)

    def _get_telemetry_data(self) -> dict[str, Any]:
        """Data Haystack sends to its usage analytics (as its own embedders do): the model name."""
        return {"model": self.model_name}

    def _client_kwargs(self) -> dict[str, Any]:
        """Key, URL and timeout for an SDK client; the SDK's own retries are off, ours apply instead."""
        key = self.api_key.resolve_value() if self.api_key is not None else None
        if not key and self.base_url is None and not os.environ.get("OPENAI_BASE_URL"):
            raise ValueError(
                "api_key: no key found in OPENAI_API_KEY or RETRIEVER_API_KEY; the OpenAI API needs one "
                "(pass api_key=Secret.from_env_var(...), or base_url for a self-hosted server)"
            )
        self._key_missing = not key
        return {"api_key": key or PLACEHOLDER_KEY, "base_url": self.base_url, "timeout": self.timeout, "max_retries": 0}

    def warm_up(self) -> None:
        """Check the options (a key where the OpenAI API needs one); no request is sent and no client kept."""
        self._client_kwargs()

    async def warm_up_async(self) -> None:
        """Create the asynchronous client on the running event loop (again if the loop changed)."""
        loop = asyncio.get_running_loop()
        if self.async_client is None or self._async_loop is None or self._async_loop() is not loop:
            self.async_client = self._new_client()
            self._async_loop = weakref.ref(loop)

    def _new_client(self) -> openai.AsyncOpenAI:
        """An SDK client sending through a `LimitedAsyncClient`: `timeout` per request in all, a size limit."""
        limit = 1024 * 1024 + self.batch_size * MAX_ANSWER_BYTES_PER_INPUT
        http = LimitedAsyncClient(deadline_s=self.timeout, max_bytes=limit)
        # openai 3 types http_client as httpx2's client and takes httpx's too (it checks for either at run time)
        return openai.AsyncOpenAI(**self._client_kwargs(), http_client=http)  # type: ignore[arg-type]

    def close(self) -> None:
        """Nothing to release: each synchronous run opens and closes its own client (`close_async` for run_async)."""

    async def close_async(self) -> None:
        """Release the asynchronous client's connections."""
        if self.async_client is not None:
            await self.async_client.close()
            self.async_client = None

    def _request(self, batch: list[str]) -> dict[str, Any]:
        """The body of one `/embeddings` request (floats, not the SDK's default base64, which not all servers speak)."""
        request: dict[str, Any] = {"model": self.model_name, "input": batch, "encoding_format": "float"}
        if self.dimensions is not None:
            request["dimensions"] = self.dimensions
        return request

    def _batches(self, texts: list[str]) -> list[list[str]]:
        """`texts` cut into consecutive requests of `batch_size`."""
        return [texts[start : start + self.batch_size] for start in range(0, len(texts), self.batch_size)]

    def _embed(self, texts: list[str], on_batch: Callable[[int], object] | None = None) -> tuple[Matrix, Meta]:
        """Embed `texts` (non-empty) in batches, up to `concurrency` at once; rows in input order.

        Runs the async implementation on a private event loop with a client of its own, closed afterwards.

        :param on_batch: Called with the size of each batch once it is embedded (a progress bar's `update`).
        """
        self.warm_up()

        async def once() -> tuple[Matrix, Meta]:
            client = self._new_client()
            try:
                return await self._embed_with(client, texts, on_batch)
            finally:
                await client.close()

        return run_blocking(once())

    async def _embed_async(self, texts: list[str]) -> tuple[Matrix, Meta]:
        """Async twin of `_embed` on the client `warm_up_async` keeps for this event loop."""
        await self.warm_up_async()
        assert self.async_client is not None  # built by warm_up_async
        return await self._embed_with(self.async_client, texts, None)

    async def _embed_with(
        self, client: openai.AsyncOpenAI, texts: list[str], on_batch: Callable[[int], object] | None
    ) -> tuple[Matrix, Meta]:
        """At most `concurrency` requests in flight; the first failure (in input order) cancels the rest."""
        gate = asyncio.Semaphore(self.concurrency)

        async def gated(batch: list[str]) -> tuple[Matrix, Meta]:
            async with gate:
                result = await self._embed_batch(client, batch)
            if on_batch is not None:
                on_batch(len(batch))
            return result

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(gated(batch)) for batch in self._batches(texts)]
        except BaseExceptionGroup as failures:
            raise failures.exceptions[0] from None
        return _combine([task.result() for task in tasks])

    async def _embed_batch(self, client: openai.AsyncOpenAI, batch: list[str]) -> tuple[Matrix, Meta]:
        """One request, retried as the module docstring says, all within `timeout`; the checked matrix and meta of
        its answer."""
        url = self._url(client.base_url)
        with CallDeadline(self.timeout) as deadline:
            attempt = 0
            while True:
                try:
                    raw = await client.embeddings.with_raw_response.create(**self._request(batch))
                except UnusableAnswer as exc:  # the same server would answer so again: not retried
                    raise unusable(exc, url, len(batch)) from None
                except openai.OpenAIError as exc:
                    self._give_up_unless_retryable(exc, len(batch), attempt, client.base_url)
                    self._give_up_unless_in_time(exc, len(batch), attempt, client.base_url, deadline)
                    await asyncio.sleep(retry_delay(exc, attempt, self.backoff))
                    attempt += 1
                else:
                    return parse_embeddings(raw.content, len(batch), self.dimensions, url)

    def _give_up_unless_retryable(self, exc: openai.OpenAIError, count: int, attempt: int, base: object) -> None:
        """Raise an `OpenAIEmbeddingError` for `exc` unless it may be retried and retries are left."""
        if attempt >= self.max_retries or not is_retryable(exc):
            raise failure(exc, self._url(base), count, attempt + 1, self._key_missing) from exc

    def _give_up_unless_in_time(
        self, exc: openai.OpenAIError, count: int, attempt: int, base: object, deadline: CallDeadline
    ) -> None:
        """Raise an `OpenAIEmbeddingError` for `exc` if the wait before the next attempt would pass `timeout`."""
        delay = retry_delay(exc, attempt, self.backoff)
        if not deadline.allows_wait(delay):
            error = failure(exc, self._url(base), count, attempt + 1, self._key_missing)
            raise OpenAIEmbeddingError(f"{error}; {deadline.too_late(delay)}", error.status) from exc

    @staticmethod
    def _url(base: object) -> str:
        """The embeddings endpoint under a client's base URL (which the SDK keeps with a trailing slash)."""
        return f"{str(base).rstrip('/')}/embeddings"


def _combine(results: list[tuple[Matrix, Meta]]) -> tuple[Matrix, Meta]:
    """Stack per-batch matrices in order and add up their token usage."""
    widths = {matrix.shape[1] for matrix, _ in results}
    if len(widths) > 1:
        raise OpenAIEmbeddingError(f"the server answered batches with vectors of different widths {sorted(widths)}")
    meta: Meta = {}
    for _, part in results:
        meta.setdefault("model", part.get("model"))
        for key, count in part.get("usage", {}).items():
            meta.setdefault("usage", {})
            meta["usage"][key] = meta["usage"].get(key, 0) + count
    return np.concatenate([matrix for matrix, _ in results]), meta
