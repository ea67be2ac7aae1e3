"""Corpora of random words for tests that need many passages and no particular text (progress, streaming)."""

import json
import random
from pathlib import Path

WORDS = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "paper", "light", "sound", "tree"]


def write_words_corpus(path: Path, lines: int, seed: int = 0) -> Path:
    """LINES UltraRAG lines (``id`` d0, d1, ..., ``contents`` 3 to 40 random WORDS) at PATH."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for i in range(lines):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
            f.write(json.dumps({"id": f"d{i}", "contents": text}) + "\n")
    return path
