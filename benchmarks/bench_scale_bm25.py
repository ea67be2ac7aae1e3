"""BM25 at scale: our store vs raw bm25s (numba backend) on the synthetic corpus, 1M passages for ``large``.

``small`` indexes 50,000 passages of ``benchmarks/synthetic_corpus.py`` (seed 0), ``large`` 1,000,000, and
both ask queries drawn from those passages. Rows, each with raw bm25s' figure beside ours:

- index build, passages/s, and peak RSS (GiB, lower is better); every ratio is ours / raw. Each side builds
  in a fresh process from the JSONL lines to a saved index. Ours: Documents written to a ``BM25DocumentStore``
  in chunks of 10,000, then ``save()`` (what ``needle index --no-dense --bm25`` runs); raw: ``bm25s.tokenize``
  (English stopwords, Snowball stemmer) + ``BM25(backend="numba").index`` + ``save`` with the corpus;
- the CLI end to end, ``needle index CORPUS --out DIR --no-dense --bm25`` (process start, reading the JSONL,
  saving the documents), against the same raw build;
- single queries/s: ``BM25Retriever.run`` vs ``bm25s.tokenize`` + ``retrieve`` per query; batch queries/s:
  ``BM25BatchRetriever`` (n_threads=-1) vs one ``tokenize`` + ``retrieve``. Both sides return the documents
  read from their saved index (ours ``documents.jsonl``, raw its ``corpus.jsonl`` loaded memory-mapped);
  the saved indexes are loaded in this process and timed in alternating rounds, best of ``ROUNDS``.

    .venv/bin/python benchmarks/bench_scale_bm25.py [--size small|large]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bm25s
import Stemmer
from haystack import Document

from components.retrievers.bm25.batch_retriever import BM25BatchRetriever
from components.retrievers.bm25.retriever import BM25Retriever
from components.stores.bm25.document_store import BM25DocumentStore

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from bench_bm25 import best_seconds  # noqa: E402
from synthetic_corpus import queries, write_corpus  # noqa: E402

SIZES = {"small": 50_000, "large": 1_000_000}
QUERIES = {"small": 300, "large": 1000}
CHUNK = 10_000
ROUNDS = 3


def read_corpus(path: Path) -> tuple[list[str], list[str]]:
    """Ids and contents of the JSONL corpus."""
    ids, texts = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            ids.append(row["id"])
            texts.append(row["contents"])
    return ids, texts


def build(side: str, corpus: Path, out: Path) -> float:
    """Build and save one side's index from ``corpus`` into ``out``; returns the seconds after reading."""
    ids, texts = read_corpus(corpus)
    start = time.perf_counter()
    if side == "ours":
        store = BM25DocumentStore(path=str(out), autosave=False)
        for first in range(0, len(ids), CHUNK):
            chunk = zip(ids[first : first + CHUNK], texts[first : first + CHUNK], strict=True)
            store.write_documents([Document(id=i, content=t) for i, t in chunk])
        store.save()
    else:
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False)
        retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4, backend="numba")
        retriever.index(tokens, show_progress=False)
        retriever.save(out, corpus=[{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)])
    return time.perf_counter() - start


def child(args: list[str]) -> tuple[str, float, float]:
    """Run a command; its stdout, wall seconds and peak RSS in GiB (of that process alone)."""
    start = time.perf_counter()
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}) as proc:
        stdout = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(args)} exited with {proc.returncode}")
    wall, rss = time.perf_counter() - start, usage.ru_maxrss / 2**20
    print(f"{' '.join(args[1:3])}: {stdout.strip() or '-'} s inside, {wall:.1f} s wall, {rss:.2f} GiB", file=sys.stderr)
    return stdout, wall, rss


def index_rows(corpus: Path, work: Path, n: int) -> list[dict]:
    """Build both sides (fresh processes) and the CLI; rows of seconds and peak RSS."""
    python = sys.executable
    ours_out, _, ours_rss = child([python, str(HERE), "--build", "ours", str(corpus), str(work / "ours")])
    raw_out, raw_wall, raw_rss = child([python, str(HERE), "--build", "raw", str(corpus), str(work / "raw")])
    needle = str(Path(python).with_name("needle"))
    _, cli_wall, cli_rss = child([needle, "index", str(corpus), "--out", str(work / "cli"), "--no-dense", "--bm25"])
    ours_s, raw_s = float(ours_out), float(raw_out)
    return [
        _row(f"index build ({n:,} passages)", n / ours_s, n / raw_s, "passages/s", f"{ours_s:.1f} s vs {raw_s:.1f} s"),
        _row(f"index peak RSS ({n:,})", ours_rss, raw_rss, "GiB", "whole build process; lower is better"),
        _row(
            f"needle index CLI ({n:,})",
            n / cli_wall,
            n / raw_wall,
            "passages/s",
            f"{cli_wall:.1f} s vs {raw_wall:.1f} s",
        ),
        _row(f"needle index CLI peak RSS ({n:,})", cli_rss, raw_rss, "GiB", "lower is better"),
    ]


def query_rows(work: Path, n: int, size: str) -> list[dict]:
    """Single and batch queries/s of the saved indexes, loaded here, in alternating rounds."""
    asked = queries(QUERIES[size], seed=0, corpus_size=n)
    store = BM25DocumentStore(path=str(work / "ours"))
    single, batch = BM25Retriever(store, top_k=10), BM25BatchRetriever(store, top_k=10, n_threads=-1)
    single.warm_up()
    batch.warm_up()
    raw = bm25s.BM25.load(work / "raw", mmap=True, load_corpus=True)
    stemmer = Stemmer.Stemmer("english")

    def raw_search(texts: list[str], n_threads: int = 0) -> object:
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        return raw.retrieve(tokens, k=10, show_progress=False, n_threads=n_threads, return_as="documents")

    raw_search(asked[:2], n_threads=-1)  # compile bm25s' numba functions outside the timings
    raw_search(asked[:1])
    ours_single, raw_single = best_seconds(
        lambda: [single.run(query=q) for q in asked], lambda: [raw_search([q]) for q in asked], rounds=ROUNDS
    )
    ours_batch, raw_batch = best_seconds(
        lambda: batch.run(queries=asked), lambda: raw_search(asked, n_threads=-1), rounds=ROUNDS
    )
    m = len(asked)
    return [
        _row(f"single query ({n:,})", m / ours_single, m / raw_single, "queries/s", "documents read from disk"),
        _row(f"batch of {m} ({n:,})", m / ours_batch, m / raw_batch, "queries/s", "n_threads=-1, documents from disk"),
    ]


def _row(benchmark: str, ours: float, peer: float, unit: str, note: str) -> dict:
    """One result row in the shape benchmarks/run.py collects (ratio = ours / raw)."""
    return {"benchmark": benchmark, "ours": ours, "peer": peer, "unit": unit, "ratio": ours / peer, "note": note}


def run(size: str = "small") -> list[dict]:
    """All rows for ``size`` ("small": 50,000 passages, a minute or two; "large": 1,000,000)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}; got {size!r}")
    n = SIZES[size]
    with tempfile.TemporaryDirectory(prefix="bench_scale_bm25_") as tmp:
        work = Path(tmp)
        corpus = write_corpus(work / "corpus.jsonl", n, seed=0)
        return index_rows(corpus, work, n) + query_rows(work, n, size)


def main() -> None:
    """CLI: print the rows, or (``--build``) build one side in this process and print its seconds."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=list(SIZES), default="small")
    parser.add_argument("--build", nargs=3, metavar=("SIDE", "CORPUS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        print(build(args.build[0], Path(args.build[1]), Path(args.build[2])))
        return
    for r in run(args.size):
        print(
            f"{r['benchmark']:<40} ours {r['ours']:>10,.2f}  raw {r['peer']:>10,.2f} {r['unit']:<10} "
            f"ratio {r['ratio']:>6.2f}  {r['note']}"
        )
    print(f"(this process' peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB)")


if __name__ == "__main__":
    main()
