"""What our sentence-transformers embedders add on top of Haystack's: the seed's encode options in one place.

Haystack's embedders (sentence-transformers-haystack) load models through a factory that caches one backend per
set of *load* parameters, so a query and a document embedder with the same model share one loaded model. Our
extra options (`prompt_name`, `task`, `query_instruction`, `gpu_ids`) are *encode* parameters and never reach
that factory, so sharing is kept. This module holds:

* :func:`validate_options` -- init-time checks shared by the three embedders;
* :class:`SentenceTransformersEncodingMixin` -- `warm_up` (model id resolved for offline use, optional
  multi-GPU pool) and `_encode`, which returns one numpy matrix per call (no per-row Python work);
* a per-model lock, because concurrent pipeline runs (Haystack runs sync components in threads) would
  otherwise call one Hugging Face tokenizer from two threads, which fails with "Already borrowed".
"""

import atexit
import threading
import weakref
from typing import Any

import numpy as np
from haystack.utils import ComponentDevice
from haystack_integrations.components.embedders.sentence_transformers.embedding_backend.backend import (
    _SentenceTransformersEmbeddingBackend,
    _SentenceTransformersEmbeddingBackendFactory,
)
from sentence_transformers import SentenceTransformer, quantize_embeddings

from components.embedders.model_resolver import resolve_model

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

_LOCKS: "weakref.WeakKeyDictionary[SentenceTransformer, threading.Lock]" = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()
_POOLS: dict[tuple[int, tuple[int, ...]], dict[str, Any]] = {}


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


def _lock_for(model: SentenceTransformer) -> threading.Lock:
    """The lock serialising encode calls on one shared model."""
    with _LOCKS_GUARD:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = threading.Lock()
        return lock


def _pool_for(model: SentenceTransformer, gpu_ids: list[int]) -> dict[str, Any]:
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

    Expects the attributes Haystack's embedders set (`model`, `device`, `token`, `batch_size`, ...) plus
    `prompt_name`, `task` and `gpu_ids`.
    """

    embedding_backend: _SentenceTransformersEmbeddingBackend | None
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

    def _encode(self, texts: list[str], *, show_progress_bar: bool, use_pool: bool = True) -> np.ndarray:
        """Encode `texts` in one `SentenceTransformer.encode` call and return an (N, dim) numpy matrix.

        `use_pool=False` keeps a single query on the first GPU instead of shipping it to worker processes.
        """
        model = self._load_backend().model
        kwargs: dict[str, Any] = dict(self.encode_kwargs or {})
        if self.task is not None:
            kwargs["task"] = self.task
        if use_pool and self.gpu_ids is not None and len(self.gpu_ids) > 1:
            kwargs["pool"] = _pool_for(model, self.gpu_ids)
        calibrated = self.quantization_ranges is not None and self.precision in ("int8", "uint8")
        with _lock_for(model):
            embeddings = model.encode(
                texts,
                prompt_name=self.prompt_name,
                batch_size=self.batch_size,
                show_progress_bar=show_progress_bar,
                normalize_embeddings=self.normalize_embeddings,
                precision="float32" if calibrated else self.precision,
                convert_to_numpy=True,
                **kwargs,
            )
        if calibrated:
            ranges = np.asarray(self.quantization_ranges)
            return quantize_embeddings(embeddings, precision=self.precision, ranges=ranges)
        return embeddings
