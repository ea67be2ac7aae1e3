"""What our sparse (SPLADE-style) embedders share: options, model loading and encoding to ``SparseEmbedding``s.

sentence-transformers-haystack ships ``SentenceTransformersSparseDocumentEmbedder`` and ``...SparseTextEmbedder``;
ours keep their parameters, their ``sparse_embedding`` outputs and their model cache (one ``SparseEncoder`` per set
of load parameters, shared with theirs), and differ where an index needs it:

* queries go through ``SparseEncoder.encode_query`` and passages through ``encode_document``, so models whose two
  sides differ (inference-free SPLADE, whose query side is a lookup table; models with "query"/"document" prompts)
  encode each side as they were trained to; Haystack's call plain ``encode`` for both;
* ``query_instruction`` as on our dense query embedders, a batch query embedder, ``max_active_dims`` (keep each
  vector's strongest terms), the model resolver of ``model_resolver`` and one encode lock per model (a Hugging Face
  tokenizer used from two threads fails with "Already borrowed");
* a whole batch comes back as one sparse tensor and is split into vectors with numpy, not row by row in torch;
* bad options are refused at init, naming the parameter.
"""

import itertools
from typing import Any, Literal, Self, TypeAlias

import numpy as np
import torch
from haystack import default_from_dict, default_to_dict
from haystack.dataclasses import SparseEmbedding
from haystack.utils import ComponentDevice, Secret
from haystack.utils.hf import deserialize_hf_model_kwargs, serialize_hf_model_kwargs
from haystack_integrations.components.embedders.sentence_transformers.embedding_backend.sparse_backend import (
    _SentenceTransformersSparseEmbeddingBackendFactory,
    _SentenceTransformersSparseEncoderEmbeddingBackend,
)
from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding, SpladePooling

from components.checks import run_instruction
from components.embedders.model_resolver import resolve_model
from components.embedders.sentence_transformers_common import encode_lock

DEFAULT_SPARSE_MODEL = "prithivida/Splade_PP_en_v1"

Backend: TypeAlias = Literal["torch", "onnx", "openvino"]


def to_sparse_embeddings(batch: torch.Tensor) -> list[SparseEmbedding]:
    """Split a (N, vocabulary) sparse COO tensor into N ``SparseEmbedding``s (indices ascending, zeros dropped)."""
    batch = batch.coalesce().cpu()
    rows, columns = batch.indices().numpy()
    values = batch.values().float().numpy()
    keep = values != 0
    rows, columns, values = rows[keep], columns[keep], values[keep]
    bounds = np.searchsorted(rows, np.arange(batch.shape[0] + 1))
    return [
        SparseEmbedding(indices=columns[s:e].tolist(), values=values[s:e].tolist())
        for s, e in itertools.pairwise(bounds)
    ]


def check_sparse_head(model: torch.nn.Module, name: str) -> None:
    """Refuse a model with no sparse pooling module (``SpladePooling``, or ``SparseStaticEmbedding``, the query
    side of inference-free SPLADE). sentence-transformers turns a dense model into a ``SparseEncoder`` by adding an
    untrained sparse autoencoder, which encodes without error into vectors that rank nothing well: an index built
    from them would look fine and be useless.

    :raises ValueError: naming the model.
    """
    if not any(isinstance(module, (SpladePooling, SparseStaticEmbedding)) for module in model.modules()):
        raise ValueError(
            f"model {name!r} is no SPLADE-style sparse model (it has no SpladePooling or SparseStaticEmbedding "
            f"module; a dense model gets an untrained sparse head): use a SparseEncoder such as {DEFAULT_SPARSE_MODEL}"
        )


class SparseEncodingBase:
    """Init options, serialization, loading and encoding of our sparse embedders; each adds its own ``run``."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_SPARSE_MODEL,
        device: ComponentDevice | None = None,
        token: Secret | None = Secret.from_env_var(["HF_API_TOKEN", "HF_TOKEN"], strict=False),
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        progress_bar: bool = True,
        max_active_dims: int | None = None,
        trust_remote_code: bool = False,
        local_files_only: bool = False,
        model_kwargs: dict[str, Any] | None = None,
        tokenizer_kwargs: dict[str, Any] | None = None,
        config_kwargs: dict[str, Any] | None = None,
        backend: Backend = "torch",
        revision: str | None = None,
    ) -> None:
        """Create the embedder; nothing is loaded until ``warm_up`` (or the first ``run``).

        :param model: Hub id or local directory of a sentence-transformers ``SparseEncoder`` (a SPLADE model such
            as ``naver/splade-cocondenser-ensembledistil`` or ``prithivida/Splade_PP_en_v1``, the default).
        :param device: Device to load the model on; default: the best available.
        :param prefix: Text put before every text embedded (after a query embedder's ``query_instruction``).
        :param suffix: Text put after every text embedded.
        :param batch_size: Texts per forward pass, an integer >= 1.
        :param max_active_dims: Keep only this many strongest terms per vector (an integer >= 1), or all (None):
            fewer terms make a smaller index and faster searches, at some cost in quality.
        Other parameters: as in sentence-transformers-haystack's sparse embedders.
        :raises ValueError: An option outside its allowed range (the message names it).
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if max_active_dims is not None and (
            isinstance(max_active_dims, bool) or not isinstance(max_active_dims, int) or max_active_dims < 1
        ):
            raise ValueError(f"max_active_dims must be an integer >= 1 or None, got {max_active_dims!r}")
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string (a hub id or a local directory), got {model!r}")
        for name, value in (("prefix", prefix), ("suffix", suffix)):
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {value!r}")
        if backend not in ("torch", "onnx", "openvino"):
            raise ValueError(f"backend must be one of torch, onnx, openvino; got {backend!r}")
        self.model = model
        self.device = ComponentDevice.resolve_device(device)
        self.token = token
        self.prefix = prefix
        self.suffix = suffix
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.max_active_dims = max_active_dims
        self.trust_remote_code = trust_remote_code
        self.local_files_only = local_files_only
        self.model_kwargs = model_kwargs
        self.tokenizer_kwargs = tokenizer_kwargs
        self.config_kwargs = config_kwargs
        self.backend = backend
        self.revision = revision
        self.embedding_backend: _SentenceTransformersSparseEncoderEmbeddingBackend | None = None

    def _get_telemetry_data(self) -> dict[str, Any]:
        """Data Haystack sends to its usage analytics (as its own embedders do): the model name."""
        return {"model": self.model}

    def _init_parameters(self) -> dict[str, Any]:
        """The init parameters this base holds, as ``to_dict`` writes them."""
        return {
            "model": self.model,
            "device": self.device,
            "token": self.token,
            "prefix": self.prefix,
            "suffix": self.suffix,
            "batch_size": self.batch_size,
            "progress_bar": self.progress_bar,
            "max_active_dims": self.max_active_dims,
            "trust_remote_code": self.trust_remote_code,
            "local_files_only": self.local_files_only,
            "model_kwargs": self.model_kwargs,
            "tokenizer_kwargs": self.tokenizer_kwargs,
            "config_kwargs": self.config_kwargs,
            "backend": self.backend,
            "revision": self.revision,
        }

    def _extra_parameters(self) -> dict[str, Any]:
        """The init parameters a subclass adds (each also an attribute)."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component (the token stays an environment-variable reference)."""
        data = default_to_dict(self, **self._init_parameters(), **self._extra_parameters())
        if data["init_parameters"].get("model_kwargs") is not None:
            serialize_hf_model_kwargs(data["init_parameters"]["model_kwargs"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild the component from ``to_dict`` output (model kwargs such as ``torch_dtype`` restored)."""
        init_params = data.get("init_parameters", {})
        if init_params.get("model_kwargs") is not None:
            deserialize_hf_model_kwargs(init_params["model_kwargs"])
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the model (shared with every sparse embedder of the same load parameters); idempotent."""
        self._load_backend()

    def _load_backend(self) -> _SentenceTransformersSparseEncoderEmbeddingBackend:
        """The cached backend of our load parameters (the MiniLM-style resolver applied to the model id).

        :raises ValueError: The model has no sparse head (see ``check_sparse_head``), naming it.
        """
        if self.embedding_backend is None:
            backend = _SentenceTransformersSparseEmbeddingBackendFactory.get_embedding_backend(
                model=resolve_model(self.model),
                device=self.device.to_torch_str(),
                auth_token=self.token,
                trust_remote_code=self.trust_remote_code,
                revision=self.revision,
                local_files_only=self.local_files_only,
                model_kwargs=self.model_kwargs,
                tokenizer_kwargs=self.tokenizer_kwargs,
                config_kwargs=self.config_kwargs,
                backend=self.backend,
            )
            check_sparse_head(backend.model, self.model)
            max_length = (self.tokenizer_kwargs or {}).get("model_max_length")
            if max_length:
                backend.model.max_seq_length = max_length
            self.embedding_backend = backend
        return self.embedding_backend

    def _encode(self, texts: list[str], *, queries: bool, show_progress_bar: bool) -> list[SparseEmbedding]:
        """Encode TEXTS as queries (``encode_query``) or passages (``encode_document``), one vector per text."""
        if not texts:
            return []
        model = self._load_backend().model
        encode = model.encode_query if queries else model.encode_document
        with encode_lock(model):
            batch = encode(
                [self.prefix + text + self.suffix for text in texts],
                batch_size=self.batch_size,
                show_progress_bar=show_progress_bar,
                convert_to_tensor=True,
                convert_to_sparse_tensor=True,
                max_active_dims=self.max_active_dims,
            )
        return to_sparse_embeddings(batch)


class SparseQueryEmbedderBase(SparseEncodingBase):
    """A sparse query embedder's options: the base's plus ``query_instruction`` (init default, run override)."""

    def __init__(self, *, query_instruction: str = "", **kwargs: Any) -> None:
        """:param query_instruction: Text put before every query (the seed's ``query_instruction``), before
            ``prefix``; a run's ``query_instruction`` replaces it for that run. SPLADE models take none.
        Other parameters: see ``SparseEncodingBase``.
        """
        if not isinstance(query_instruction, str):
            raise ValueError(f"query_instruction must be a string, got {query_instruction!r}")
        SparseEncodingBase.__init__(self, **kwargs)  # @component rebuilds the class: no zero-argument super()
        self.query_instruction = query_instruction

    def _extra_parameters(self) -> dict[str, Any]:
        """``query_instruction``."""
        return {"query_instruction": self.query_instruction}

    def _queries(self, texts: list[str], query_instruction: str | None) -> list[SparseEmbedding]:
        """Encode TEXTS as queries with the run's instruction (None: the init one; ``""``: none)."""
        instruction = run_instruction(self.query_instruction, query_instruction)
        return self._encode([instruction + t for t in texts], queries=True, show_progress_bar=self.progress_bar)
