"""A cross-encoder reranker that runs a local transformers model (mxRAG's ``LocalReranker``)."""

from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import torch
from haystack import component, logging
from haystack.utils import ComponentDevice
from transformers import AutoModelForSequenceClassification, AutoTokenizer, PreTrainedModel

from components.checks import check_int, check_query, check_score_threshold, check_top_k
from components.rankers.model_dir_checks import check_model_dir, check_model_path
from components.rankers.reranker_base import (
    RerankerMixin,
    Scores,
    check_batch_size,
    check_texts,
)

logger = logging.getLogger(__name__)

ACTIVATIONS = ("none", "sigmoid")
DEV_ID_RANGE = (0, 63)
# Tokenizers without a configured limit report a huge sentinel (1e30); anything above this is "no limit".
NO_TOKENIZER_LIMIT = 1_000_000
# Pairs whose token counts are taken at once when ordering a rerank call by length.
LENGTH_CHUNK = 4096


def usable_positions(model: PreTrainedModel) -> int | None:
    """
    How many tokens the model's position embeddings can take, or None if it has no such table.

    The roberta family (roberta, xlm-roberta, so bge-reranker) numbers positions from ``padding_idx + 1``: with
    ``max_position_embeddings`` 514 and ``pad_token_id`` 1, only 512 positions are usable. Its position table is
    built with that padding index, which is how we detect the offset without a list of model types.
    """
    limit = getattr(model.config, "max_position_embeddings", None)
    if not isinstance(limit, int) or not limit:
        return None
    embeddings = getattr(model.base_model, "embeddings", None)
    table = getattr(embeddings, "position_embeddings", None)
    padding_idx = getattr(table, "padding_idx", None)  # an int, or None for a table without padding
    return limit - (padding_idx + 1) if isinstance(padding_idx, int) else limit


@component
class LocalCrossEncoderRanker(RerankerMixin):
    """
    Reranks documents with a local cross-encoder (e.g. bge-reranker) loaded by transformers.

    Each (query, text) pair is truncated to the model's maximum length, batched with pairs of similar token
    count (less padding, so less compute), scored, and the scores are put back in input order. Scores are the raw
    logits unless ``activation="sigmoid"``. The model directory passes mxRAG's safety checks before loading
    (see ``model_dir_checks``): safetensors only, no symlinks, not writable by others, not under system dirs.

    ``use_fp16`` halves the model on a GPU. On CPU it is IGNORED with a warning, and the model runs in float32:
    half precision on CPU is slower and lacks kernels for some layers, and mxRAG's default is ``True``, so
    refusing it would break every CPU user who keeps the default.

    ```python
    ranker = LocalCrossEncoderRanker(model_path="/models/bge-reranker-base", top_k=5)
    ranker.warm_up()
    ranker.run(query="what is a cat?", documents=docs)["documents"]
    ranker.rerank("what is a cat?", ["a cat is a small feline", "the stock market"])  # np.ndarray, input order
    ```
    """

    _init_parameters = (
        "model_path",
        "top_k",
        "batch_size",
        "device",
        "dev_id",
        "use_fp16",
        "activation",
        "max_length",
        "score_threshold",
    )

    def __init__(
        self,
        model_path: str,
        *,
        top_k: int = 10,
        batch_size: int = 32,
        device: ComponentDevice | None = None,
        dev_id: int = 0,
        use_fp16: bool = True,
        activation: Literal["none", "sigmoid"] = "none",
        max_length: int | None = None,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param model_path: absolute path of a local model directory (checked as mxRAG does; see module doc).
        :param top_k: how many documents ``run`` and ``rerank_top_k`` keep, 1..10000 (mxRAG's ``k``).
        :param batch_size: pairs per forward pass, 1..1024.
        :param device: where to run; if None, GPU ``dev_id`` when CUDA is available, else CPU.
        :param dev_id: GPU index used when ``device`` is None, 0..63 (mxRAG's card id).
        :param use_fp16: run in half precision on GPU; ignored with a warning on CPU.
        :param activation: ``"none"`` returns raw logits (mxRAG), ``"sigmoid"`` maps them to (0, 1).
        :param max_length: optional cap on tokens per pair, below the model's own maximum.
        :param score_threshold: drop documents scoring below it, on the model's scale: a raw logit (any real
            number) or, with ``activation="sigmoid"``, a probability in (0, 1); None keeps every document.
        :raises ValueError: if a parameter is out of range; the message names it and the range.
        """
        self.model_path = check_model_path(model_path)
        self.top_k = check_top_k(top_k)
        self.batch_size = check_batch_size(batch_size)
        if device is not None and not isinstance(device, ComponentDevice):
            raise ValueError(f"device must be a ComponentDevice or None, got {type(device).__name__}")
        self.device = device
        self.dev_id = check_int("dev_id", dev_id, *DEV_ID_RANGE)
        if not isinstance(use_fp16, bool):
            raise ValueError(f"use_fp16 must be a bool, got {use_fp16!r}")
        self.use_fp16 = use_fp16
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        self.activation = activation
        self.max_length = None if max_length is None else check_int("max_length", max_length, 2, 1_000_000)
        self.score_threshold = check_score_threshold(score_threshold)
        self._model: PreTrainedModel | None = None
        self._tokenizer: Any = None
        self._torch_device: torch.device | None = None
        self._max_tokens = 0

    def _resolve_device(self) -> torch.device:
        """The explicit device, else GPU ``dev_id`` when CUDA is present, else CPU."""
        if self.device is not None:
            return self.device.to_torch()
        if torch.cuda.is_available():
            if self.dev_id >= torch.cuda.device_count():
                raise ValueError(
                    f"dev_id must be in [0, {torch.cuda.device_count() - 1}] on this machine, got {self.dev_id}"
                )
            return torch.device(f"cuda:{self.dev_id}")
        return torch.device("cpu")

    def warm_up(self) -> None:
        """Check the model directory, then load tokenizer and model (once; later calls do nothing)."""
        self._load()

    def _load(self) -> PreTrainedModel:
        """The loaded model (with tokenizer, token limit and device set next to it), loading it on first use."""
        if self._model is not None:
            return self._model
        model_dir = str(check_model_dir(self.model_path))
        device = self._resolve_device()
        half = self.use_fp16 and device.type == "cuda"
        if self.use_fp16 and not half:
            logger.warning(
                "use_fp16 is ignored on {device}: half precision is applied on GPU only; running in float32",
                device=str(device),
            )
        model = AutoModelForSequenceClassification.from_pretrained(
            model_dir, local_files_only=True, use_safetensors=True, dtype=torch.float16 if half else torch.float32
        )
        if model.config.num_labels != 1:
            raise ValueError(
                f"{model_dir}: a reranker needs one output score per pair, but the model has "
                f"num_labels={model.config.num_labels}"
            )
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self._max_tokens = self._token_limit(model, tokenizer)
        self._tokenizer = tokenizer
        self._torch_device = device
        self._model = model.to(device).eval()
        return self._model

    def _token_limit(self, model: PreTrainedModel, tokenizer: Any) -> int:
        """The smallest of: the tokenizer's limit, the usable position embeddings, and ``max_length``."""
        limits = [usable_positions(model), self.max_length]
        if 0 < tokenizer.model_max_length <= NO_TOKENIZER_LIMIT:
            limits.append(tokenizer.model_max_length)
        known = [limit for limit in limits if limit]
        if not known:
            raise ValueError(f"{self.model_path}: cannot tell the model's maximum length; pass max_length")
        return min(known)

    @property
    def max_tokens(self) -> int:
        """Tokens per (query, text) pair after truncation; known after ``warm_up``."""
        return self._max_tokens

    def rerank(self, query: str, texts: list[str], batch_size: int = 32) -> Scores:
        """
        Score each text against the query (mxRAG's call).

        :returns: float32 scores, one per text, in input order (raw logits unless ``activation="sigmoid"``).
        :raises ValueError: if the query, the texts or ``batch_size`` are out of mxRAG's ranges.
        """
        check_query(query)
        texts = check_texts(texts)
        check_batch_size(batch_size)
        self.warm_up()
        # Longest first by exact token count, so each batch pads little; the scores then go back to input order.
        order = np.argsort(-self._token_counts(query, texts), kind="stable")
        scores = np.empty(len(texts), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            batch = order[start : start + batch_size]
            scores[batch] = self._score_batch(query, [texts[i] for i in batch])
        return scores

    def _token_counts(self, query: str, texts: list[str]) -> npt.NDArray[np.int64]:
        """Tokens of each truncated (query, text) pair, counted in chunks to bound memory."""
        counts = np.empty(len(texts), dtype=np.int64)
        for start in range(0, len(texts), LENGTH_CHUNK):
            chunk = texts[start : start + LENGTH_CHUNK]
            ids = self._tokenizer([query] * len(chunk), chunk, truncation=True, max_length=self._max_tokens)
            counts[start : start + len(chunk)] = [len(row) for row in ids["input_ids"]]
        return counts

    @torch.inference_mode()
    def _score_batch(self, query: str, texts: list[str]) -> Scores:
        """One forward pass over (query, text) pairs, truncated to the model's limit."""
        encoded = self._tokenizer(
            [query] * len(texts),
            texts,
            padding=True,
            truncation=True,
            max_length=self._max_tokens,
            return_tensors="pt",
        ).to(self._torch_device)
        logits = self._load()(**encoded).logits.view(-1).float()
        if self.activation == "sigmoid":
            logits = torch.sigmoid(logits)
        scores: Scores = logits.cpu().numpy()  # float32 (`.float()` above); torch types numpy() as Any
        return scores
