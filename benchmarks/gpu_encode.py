"""Corpus encoding on a GPU: our document embedder (``gpu_ids=[0]``) against raw sentence-transformers.

Run where CUDA is present (a lent GPU machine; it is not a ``bench_*`` module, so ``benchmarks/run.py`` on a
CPU machine does not pick it up)::

    python benchmarks/gpu_encode.py --passages 200000 [--batch-size 256]

The model is shaped like all-MiniLM-L6-v2 (6 layers, 384 wide, 12 heads) with random, seeded weights
(``benchmarks/tiny_models.py``): no hub is reachable there, and encoding speed depends on the shape, not on
the weights. Passages are synthetic (``synthetic_corpus.py`` when present: Zipf words, realistic lengths).
Both sides encode the same passages with the same batch size, fp32; ours also writes the ``.npy`` embedding
file with its fingerprint, as ``needle index`` does. Prints passages/s for each and the ratio ours / raw.
"""

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from haystack import Document
from sentence_transformers import SentenceTransformer

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiny_models import build_bert

from components.embedders.sentence_transformers_document_embedder import (
    SentenceTransformersDocumentEmbedder,
)


def synthetic_texts(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """N passages and the vocabulary they use: Zipf-distributed words, lognormal lengths around 60 words."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(30000)]
    lengths = np.clip(rng.lognormal(mean=4.0, sigma=0.4, size=n).astype(int), 5, 200)
    ranks = (rng.zipf(1.1, size=int(lengths.sum())) - 1) % len(vocab)
    words = np.asarray(vocab)[ranks]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [" ".join(words[bounds[i] : bounds[i + 1]]) for i in range(n)], vocab


def timed(label: str, work: Callable[[], object]) -> float:
    """Seconds WORK takes, with the GPU synchronised before and after; prints LABEL."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    work()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(f"{label}: {seconds:.1f} s", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=200_000)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_encode.py needs a CUDA GPU")
    texts, vocab = synthetic_texts(args.passages)
    work = Path(tempfile.mkdtemp())
    model_dir = build_bert(work / "minilm-shaped", vocab, layers=6, hidden=384, heads=12, max_seq_length=256)
    raw = SentenceTransformer(str(model_dir), device="cuda:0")
    ours = SentenceTransformersDocumentEmbedder(
        model=str(model_dir), gpu_ids=[0], batch_size=args.batch_size, normalize_embeddings=True,
        encode_chunk_size=16384, embedding_path=str(work / "embeddings.npy"), progress_bar=False,
    )  # fmt: skip
    ours.warm_up()
    documents = [Document(id=str(i), content=t) for i, t in enumerate(texts)]
    raw.encode(texts[:2048], batch_size=args.batch_size)  # warm-up: CUDA kernels, allocator
    raw_s = timed("raw", lambda: raw.encode(texts, batch_size=args.batch_size, normalize_embeddings=True))
    ours_s = timed("ours", lambda: ours.run(documents=documents))
    print(f"\n{args.passages} passages on {torch.cuda.get_device_name(0)}, batch {args.batch_size}, fp32")
    print(f"| side | passages/s |\n|---|---|\n| raw | {args.passages / raw_s:,.0f} |")
    print(f"| ours (.npy written) | {args.passages / ours_s:,.0f} |\n\nratio ours/raw speed: {raw_s / ours_s:.2f}")
    print(f"1M passages: about {1e6 / (args.passages / ours_s) / 60:.1f} min with ours")


if __name__ == "__main__":
    main()
