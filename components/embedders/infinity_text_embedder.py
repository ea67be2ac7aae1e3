"""Query embedder for the seed's `infinity` backend: a managed Infinity server, or one already running at `url`.

The Infinity components are our OpenAI-compatible embedders (`openai_common`: batching, `concurrency`, retries,
answer checks) pointed at an Infinity server. With `url` they connect to a server that is already running; without
it, `warm_up` leases a managed `infinity_emb v2` process (`infinity_server`) started from `infinity_venv` with the
seed's engine options mapped to its flags, and `close` (or garbage collection, or interpreter exit) gives it back.
Components with the same server settings in one process share one server; the last to close stops it. Their
`run` and `run_async` are the OpenAI embedders', `query_instruction` run input included (it replaces the init
parameter's instruction for one run).
"""

import asyncio
import re
import threading
import weakref
from typing import Any, ClassVar

from haystack import component
from haystack.utils import Secret

from components.checks import check_base_url, check_number
from components.embedders.infinity_server import InfinityServer, InfinitySettings, lease, release
from components.embedders.openai_common import OpenAIEmbedderBase, check_string
from components.embedders.openai_text_embedder import OpenAIQueryEmbedderBase, OpenAITextEmbedder

DEFAULT_INFINITY_KEY = Secret.from_env_var("INFINITY_API_KEY", strict=False)
POOLING_METHODS = ("auto", "mean", "cls")
DEVICE_PATTERN = re.compile(r"auto|cpu|mps|tensorrt|xla|cuda(:\d+(,\d+)*)?")
# One component warmed up from two threads at once must lease its server once (it would keep one lease forever).
# Server starts are rare, so one lock for all components is simpler than one per component, and enough.
_START_LOCK = threading.Lock()
SERVER_PARAMETERS = (
    "model_name_or_path",
    "url",
    "api_key",
    "infinity_venv",
    "bettertransformer",
    "pooling_method",
    "model_warmup",
    "trust_remote_code",
    "device",
    "startup_timeout",
)


class InfinityBackend(OpenAIEmbedderBase):
    """The server half of the Infinity embedders: options, and a managed server leased in `warm_up`.

    A subclass calls `_configure` (the OpenAI options) and `_configure_infinity` from its `__init__`.
    """

    def _configure_infinity(
        self,
        *,
        model_name_or_path: str,
        url: str | None,
        infinity_venv: str,
        bettertransformer: bool,
        pooling_method: str,
        model_warmup: bool,
        trust_remote_code: bool,
        device: str,
        startup_timeout: float,
    ) -> None:
        """Check and keep the server options (`batch_size` is checked by `_configure`).

        :raises ValueError: An option outside its allowed range; the message names it and the range.
        """
        self.model_name_or_path = check_string("model_name_or_path", model_name_or_path, empty=False)
        self.url = check_base_url(url, "url")
        self.infinity_venv = check_string("infinity_venv", infinity_venv, empty=False)
        for name, flag in (
            ("bettertransformer", bettertransformer),
            ("model_warmup", model_warmup),
            ("trust_remote_code", trust_remote_code),
        ):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be a bool, got {flag!r}")
        self.bettertransformer, self.model_warmup, self.trust_remote_code = (
            bettertransformer,
            model_warmup,
            trust_remote_code,
        )
        if pooling_method not in POOLING_METHODS:
            raise ValueError(f"pooling_method must be one of {', '.join(POOLING_METHODS)}, got {pooling_method!r}")
        self.pooling_method = pooling_method
        if not isinstance(device, str) or not DEVICE_PATTERN.fullmatch(device):
            raise ValueError(
                f"device must be auto, cpu, mps, tensorrt, xla, cuda or cuda:<ids> (e.g. cuda:0,1), got {device!r}"
            )
        self.device = device
        self.startup_timeout = check_number("startup_timeout", startup_timeout, 0, 3600, low_open=True)
        self._server: InfinityServer | None = None
        self._lease: weakref.finalize[[InfinityServer], InfinityBackend] | None = None

    @property
    def server(self) -> InfinityServer | None:
        """The managed server while this component holds it (None with `url`, before `warm_up` and after `close`)."""
        return self._server

    def settings(self) -> InfinitySettings:
        """The managed server's settings: what it serves and how (the key under which servers are shared)."""
        return InfinitySettings(
            model_name_or_path=self.model_name_or_path,
            infinity_venv=self.infinity_venv,
            bettertransformer=self.bettertransformer,
            pooling_method=self.pooling_method,
            model_warmup=self.model_warmup,
            trust_remote_code=self.trust_remote_code,
            batch_size=self.batch_size,
            device=self.device,
        )

    def _start_server(self) -> None:
        """Lease and start the managed server unless `url` is set or one is held (idempotent)."""
        with _START_LOCK:
            if self.url is not None or self._server is not None:
                return
            server = lease(self.settings())
            try:
                server.start(self.startup_timeout)
            except BaseException:
                release(server)
                raise
            self._server = server
            self._lease = weakref.finalize(self, release, server)  # gives it back if this component is dropped
            self.base_url = server.base_url

    def _client_kwargs(self) -> dict[str, Any]:
        """The SDK client options; a managed server is reached with the random key it was started with."""
        kwargs = super()._client_kwargs()
        if self._server is not None:
            kwargs["api_key"] = self._server.api_key
            self._key_missing = False
        return kwargs

    def warm_up(self) -> None:
        """Start (or share) the managed server and wait for its health, then build the client (idempotent).

        :raises ValueError: `infinity_venv` holds no `infinity_emb`.
        :raises InfinityServerError: The server exited or was not healthy within `startup_timeout` (with its log).
        """
        self._start_server()
        super().warm_up()

    async def warm_up_async(self) -> None:
        """Async twin of `warm_up`: the server starts on a worker thread, so the event loop keeps running."""
        if self.url is None and self._server is None:
            await asyncio.to_thread(self._start_server)
        await super().warm_up_async()

    def close(self) -> None:
        """Release the clients and give back the managed server (the last holder stops it); harmless twice."""
        super().close()
        self.async_client = None  # it would point at a stopped server; close_async closes it properly first
        if self._lease is not None:
            self._lease()
        self._server = self._lease = None
        self.base_url = self.url

    async def close_async(self) -> None:
        """Async twin of `close`: the server is stopped on a worker thread."""
        await super().close_async()
        await asyncio.to_thread(self.close)


class InfinityQueryEmbedderBase(InfinityBackend, OpenAIQueryEmbedderBase):
    """Options and serialization shared by the Infinity single-query and batch-query embedders."""

    _init_parameters: ClassVar[tuple[str, ...]] = (
        *SERVER_PARAMETERS,
        "query_instruction",
        "prefix",
        "suffix",
        "batch_size",
        "concurrency",
        "timeout",
        "max_retries",
        "backoff",
    )

    def __init__(
        self,
        *,
        model_name_or_path: str,
        url: str | None = None,
        api_key: Secret | None = DEFAULT_INFINITY_KEY,
        infinity_venv: str = ".venv-infinity",
        bettertransformer: bool = False,
        pooling_method: str = "auto",
        model_warmup: bool = False,
        trust_remote_code: bool = True,
        device: str = "auto",
        startup_timeout: float = 300.0,
        query_instruction: str = "",
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        concurrency: int = 4,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        """Create the embedder; no server starts and no connection is made until `warm_up` or the first `run`.

        :param model_name_or_path: The model: a Hugging Face id or a local directory. A managed server loads it;
            with `url` it is the `model` field of each request (a one-model Infinity server serves any name).
        :param url: The API root of an Infinity server already running, e.g. ``http://127.0.0.1:7997`` (add the
            server's `--url-prefix`, if any). None: start a managed server on a free port of 127.0.0.1.
        :param api_key: Sent to the server at `url` (its `--api-key`); by default `INFINITY_API_KEY`, if set. A
            managed server gets a random key of its own instead.
        :param infinity_venv: The Python environment holding `infinity_emb` (`<venv>/bin/infinity_emb`); relative
            paths are looked up in the current directory, then in the project checkout.
        :param bettertransformer: Infinity's `--bettertransformer` (varlen flash-attention where available).
        :param pooling_method: `auto` (the model's own), `mean` or `cls`: Infinity's `--pooling-method`.
        :param model_warmup: Infinity's `--model-warmup` (a few batches before the server reports healthy).
        :param trust_remote_code: Infinity's `--trust-remote-code` (run modeling code shipped with the model).
        :param device: `auto`, `cpu`, `cuda`, `cuda:<ids>` (e.g. `cuda:0,1`: `--device cuda --device-id 0,1`),
            `mps`, `tensorrt` or `xla`: Infinity's `--device`.
        :param startup_timeout: Seconds a managed server may take to become healthy, (0, 3600].
        :param batch_size: Texts per request, 1..2048, and the managed server's `--batch-size` (the seed's
            `batch_size`).
        Other parameters: as in :class:`OpenAITextEmbedder`.
        :raises ValueError: An option outside its allowed range (the message names it and the range).
        """
        self._configure_infinity(
            model_name_or_path=model_name_or_path,
            url=url,
            infinity_venv=infinity_venv,
            bettertransformer=bettertransformer,
            pooling_method=pooling_method,
            model_warmup=model_warmup,
            trust_remote_code=trust_remote_code,
            device=device,
            startup_timeout=startup_timeout,
        )
        OpenAIQueryEmbedderBase.__init__(
            self,
            model_name=model_name_or_path,
            base_url=url,
            api_key=api_key,
            query_instruction=query_instruction,
            prefix=prefix,
            suffix=suffix,
            batch_size=batch_size,
            concurrency=concurrency,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
        )


@component
class InfinityTextEmbedder(InfinityQueryEmbedderBase, OpenAITextEmbedder):
    """Embeds one query string with the Infinity engine (the seed's `infinity` backend).

    ```python
    embedder = InfinityTextEmbedder(model_name_or_path="BAAI/bge-small-en-v1.5", device="cpu")
    embedder.warm_up()  # starts infinity_emb v2 from .venv-infinity on a free port
    vector = embedder.run(text="what causes scurvy?")["embedding"]
    embedder.close()  # stops it
    ```
    """
