"""Build small sentence-transformers models with random weights, offline, for benchmarks and device checks.

Their embeddings mean nothing; what they give is a real model of a chosen size (a tiny one so that a million
passages encode in minutes on a CPU, or one shaped like all-MiniLM-L6-v2 to time encoding on a GPU) that the
real loading and encoding code runs, on a machine that cannot reach a model hub. The same arguments always
build the same weights (seeded), so CPU and GPU encodings of one model can be compared.
"""

from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer, models
from tokenizers import Tokenizer, pre_tokenizers, processors
from tokenizers import models as token_models
from transformers import AutoTokenizer, BertConfig, BertModel, PreTrainedTokenizerFast

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _tokenizer(words: list[str]) -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer over WORDS that wraps every text in [CLS] ... [SEP], as BERT's does."""
    vocab = {token: i for i, token in enumerate(SPECIAL + sorted(set(words) - set(SPECIAL)))}
    tok = Tokenizer(token_models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )


def build_bert(
    out: Path,
    words: list[str] | None = None,
    *,
    tokenizer_from: str | None = None,
    layers: int = 2,
    hidden: int = 32,
    heads: int = 2,
    intermediate: int | None = None,
    max_seq_length: int = 128,
) -> Path:
    """Save a mean-pooled, normalised BERT sentence-transformers model with random (seeded) weights in OUT.

    The tokenizer is a word-level one over WORDS, or the one of the model directory TOKENIZER_FROM (e.g. MiniLM's,
    so that real text tokenizes as it would for a real model). ``layers=6, hidden=384, heads=12`` is
    all-MiniLM-L6-v2's shape; ``intermediate`` defaults to 4 * hidden. Returns OUT; an existing model there is kept.
    """
    out = Path(out)
    if (out / "modules.json").is_file():
        return out
    if (words is None) == (tokenizer_from is None):
        raise ValueError("give either words or tokenizer_from")
    hf_dir = out.parent / f"{out.name}-hf"
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_from) if tokenizer_from else _tokenizer(words or [])
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate or 4 * hidden,
        max_position_embeddings=512,
    )
    BertModel(config).save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    transformer = models.Transformer(str(hf_dir), max_seq_length=max_seq_length)
    pooling = models.Pooling(hidden, pooling_mode="mean")
    SentenceTransformer(modules=[transformer, pooling, models.Normalize()]).save(str(out))
    return out
