"""A tiny SPLADE-style sentence-transformers ``SparseEncoder`` for tests, built offline from a seeded random BERT.

A ``BertForMaskedLM`` of two layers and hidden size 32 over MiniLM's tokenizer (30,522 word pieces), read through
sentence-transformers' fill-mask ``Transformer`` and ``SpladePooling`` (max over tokens of log(1 + ReLU(logit))): the
architecture of naver/splade and prithivida/Splade_PP, so the real loading and encoding code runs. Its weights are
random, so its vectors prove plumbing, not relevance; a negative output bias keeps them sparse
(200 to 300 terms per short text, as a trained SPLADE gives, instead of most of the vocabulary). The same call
always builds the same weights (seeded).
"""

from pathlib import Path

import torch
from sentence_transformers import SparseEncoder
from sentence_transformers.sentence_transformer.modules import Transformer
from sentence_transformers.sparse_encoder.modules import SpladePooling
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from tests.support.model_home import MODELS
from tests.support.once import exclusive

_LOGIT_BIAS = -0.35


def build_splade(out: Path, tokenizer_from: str, hidden: int = 32) -> Path:
    """Save the tiny sparse encoder in OUT (kept when one is already there) and return OUT."""
    if (out / "modules.json").is_file():
        return out
    hf_dir = out.parent / f"{out.name}-hf"
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_from)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=512,
    )
    mlm = BertForMaskedLM(config)
    with torch.no_grad():  # random logits sit near 0 (std ~0.1): a negative bias keeps a few hundred terms per text
        mlm.cls.predictions.bias.fill_(_LOGIT_BIAS)
    mlm.save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    # 32 tokens: each token costs a 30,522-wide output, the bulk of the encoding time
    transformer = Transformer(str(hf_dir), max_seq_length=32, transformer_task="fill-mask")
    modules = [transformer, SpladePooling(pooling_strategy="max")]
    SparseEncoder(modules=modules, device="cpu").save(str(out))
    return out


def tiny_splade_path(minilm_path: str) -> str:
    """The shared tiny sparse encoder's directory (built by one pytest-xdist worker, reused by the others)."""
    target = MODELS / "tiny-splade-h32-len32"
    with exclusive(MODELS, target.name):
        return str(build_splade(target, minilm_path))
