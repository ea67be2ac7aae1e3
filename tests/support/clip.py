"""A tiny CLIP model for the multimodal tests, built from a config and trained here (no hub, no download).

* :func:`build_clip` makes a transformers ``CLIPModel`` with one-layer vision and text towers, a word-level
  tokenizer trained on the toy captions (wrapped as a ``PreTrainedTokenizerFast``) and a ``CLIPImageProcessor``,
  saves them as a Hugging Face directory, wraps that in sentence-transformers' ``Transformer`` module (which
  detects the text and image modalities of CLIP) and saves a sentence-transformers model directory.
* :func:`train_clip` runs CLIP's symmetric contrastive loss over the toy (image, caption) pairs through the
  loaded ``SentenceTransformer``'s own ``preprocess`` and ``forward``, so the same path that ``encode`` takes.
* :func:`pair_accuracy` counts the captions whose nearest image is their own.
"""

from pathlib import Path

import torch
from PIL import Image
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, PreTrainedTokenizerFast

# The toy set: one solid-colour image per caption.
PAIRS = {
    "red": "red square",
    "green": "green circle",
    "blue": "blue triangle",
    "yellow": "yellow star",
    "white": "white cross",
    "purple": "purple ring",
}
IMAGE_SIZE = 32


def toy_image(colour: str, size: int = 40) -> Image.Image:
    """A solid-colour RGB image (the processor resizes it to the model's input size)."""
    return Image.new("RGB", (size, size), colour)


def _tokenizer(captions: list[str]) -> PreTrainedTokenizerFast:
    """A lower-casing word-level tokenizer over the captions, adding <bos> and <eos> as CLIP's does."""
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    words = [*captions, "a photo of the"]
    tok.train_from_iterator(words, trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<bos>", "<eos>"]))
    bos, eos = tok.token_to_id("<bos>"), tok.token_to_id("<eos>")
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", special_tokens=[("<bos>", bos), ("<eos>", eos)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<bos>",
        eos_token="<eos>",
        model_max_length=16,
    )


def build_clip(hf_dir: Path, st_dir: Path) -> Path:
    """Save a random tiny CLIP as a Hugging Face directory and as a sentence-transformers model; returns ST_DIR."""
    torch.manual_seed(0)
    tokenizer = _tokenizer(list(PAIRS.values()))
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "max_position_embeddings": 16,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,  # CLIP pools the text at this token
        "pad_token_id": tokenizer.pad_token_id,
    }
    vision = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": IMAGE_SIZE,
        "patch_size": 8,
    }
    CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).save_pretrained(hf_dir)
    crop = {"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    processor = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE}, crop_size=crop)
    CLIPProcessor(image_processor=processor, tokenizer=tokenizer).save_pretrained(hf_dir)
    SentenceTransformer(modules=[Transformer(str(hf_dir))]).save(str(st_dir))
    return st_dir


def train_clip(model: SentenceTransformer, steps: int = 40) -> None:
    """Train MODEL in place with CLIP's symmetric contrastive loss over the toy pairs."""
    torch.manual_seed(0)
    images = [toy_image(colour) for colour in PAIRS]
    captions = list(PAIRS.values())
    labels = torch.arange(len(captions))
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(steps):
        image_emb = torch.nn.functional.normalize(model(model.preprocess(images))["sentence_embedding"], dim=-1)
        text_emb = torch.nn.functional.normalize(model(model.preprocess(captions))["sentence_embedding"], dim=-1)
        logits = text_emb @ image_emb.T * 20.0
        loss = torch.nn.functional.cross_entropy(logits, labels) + torch.nn.functional.cross_entropy(logits.T, labels)
        optimizer.zero_grad()
        (loss / 2).backward()
        optimizer.step()
    model.eval()


def pair_accuracy(model: SentenceTransformer) -> int:
    """How many captions have their own image as nearest (cosine) among all toy images."""
    images = model.encode([toy_image(colour) for colour in PAIRS], normalize_embeddings=True)
    texts = model.encode(list(PAIRS.values()), normalize_embeddings=True)
    nearest = (texts @ images.T).argmax(axis=1)
    return int(sum(int(i == j) for j, i in enumerate(nearest)))
