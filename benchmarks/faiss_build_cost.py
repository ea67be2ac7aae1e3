"""The cost of a dense build from an embeddings file: ``needle index CORPUS --embeddings FILE.npy`` against raw
faiss doing the same job, wall time and peak RSS, each side in a process of its own.

"The same job" is what a hand-written indexer minimally does so that its searches can answer with documents:

- raw: stream the corpus JSONL, store ``(row, id, document JSON)`` in an SQLite file (batches of ``CHUNK`` rows,
  a commit each), ``np.load(FILE, mmap_mode="r")`` and add its rows to ``IndexIDMap2(IndexFlatIP)`` in chunks of
  ``CHUNK`` under their row ids, ``write_index``. Python, numpy, faiss and sqlite3 are all it imports.
- ours: the ``needle index CORPUS --out DIR --embeddings FILE`` CLI (dense only, Flat), which also checks FILE
  (rows, dimension, finiteness) and the corpus, copies FILE into the generation with its fingerprint (hashed as it
  is written), digests the other files for the manifest (on parallel threads), and writes the search pipelines, all
  crash-safely; its document table is written where the generation keeps it, without the vectors, from the
  corpus's fields (no Haystack Document encoded per passage); its vectors file is hashed as FAISS writes it; it
  imports Haystack, which imports torch (1.5-4 s and 0.25 GB on this machine: Haystack's ``LazyImport`` of torch
  in ``haystack.utils.device`` is not lazy).

Each run is a child process started by a small wrapper process of its own, which reports the child's wall time,
CPU time (user + system, every thread: steadier than wall time on a shared machine) and peak resident set
(``getrusage(RUSAGE_CHILDREN)``); memory-mapped pages of FILE that a side touched count in its RSS. Rounds
alternate raw and ours (the machine is shared: compare the ratios), and each figure is the best of the rounds.
With ``--hnsw-threads`` it also builds HNSW32 (``--index-type hnsw``) with each ``--threads`` count given and
prints the wall times, to show how the add scales with cores.

The corpus and vectors are made once under ``--work`` (benchmarks/synthetic_corpus.py, synthetic_vectors.py)::

    .venv/bin/python benchmarks/faiss_build_cost.py [--n 200000] [--rounds 2] [--hnsw-threads 1,2 --hnsw-n 100000]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from synthetic_corpus import write_corpus
from synthetic_vectors import default_clusters
from synthetic_vectors import write_corpus as write_vectors

ROOT = Path(__file__).resolve().parents[1]
NEEDLE = Path(sys.executable).parent / "needle"
CHUNK = 50_000  # raw: rows per SQLite batch and per faiss add

RAW = r"""
import json, sqlite3, sys
import faiss, numpy as np
corpus, npy, out = sys.argv[1:4]
db = sqlite3.connect(out + "/documents.sqlite")
db.execute("CREATE TABLE documents (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, document TEXT NOT NULL)")
batch, row = [], 0
with open(corpus, encoding="utf-8") as lines:
    for line in lines:
        if line.strip():
            document = json.loads(line)
            batch.append((row, str(document["id"]), json.dumps(document, ensure_ascii=False)))
            row += 1
            if len(batch) == CHUNK:
                with db:
                    db.executemany("INSERT INTO documents VALUES (?, ?, ?)", batch)
                batch = []
with db:
    db.executemany("INSERT INTO documents VALUES (?, ?, ?)", batch)
db.close()
vectors = np.load(npy, mmap_mode="r")
index = faiss.IndexIDMap2(faiss.IndexFlatIP(vectors.shape[1]))
for start in range(0, len(vectors), CHUNK):
    block = np.ascontiguousarray(vectors[start : start + CHUNK], dtype=np.float32)
    index.add_with_ids(block, np.arange(start, start + len(block), dtype=np.int64))
faiss.write_index(index, out + "/vectors.faiss")
""".replace("CHUNK", str(CHUNK))

MEASURE = r"""
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
seconds = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
peak, cpu = usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime
print(json.dumps({"seconds": seconds, "peak": peak, "cpu": cpu, "rc": done.returncode, "err": done.stderr[-2000:]}))
"""


def measure(command: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall seconds, CPU seconds (user + system, all threads) and peak RSS (bytes) of COMMAND run in a process of its
    own (by a wrapper of its own)."""
    found = subprocess.run(
        [sys.executable, "-c", MEASURE, *command], capture_output=True, text=True, check=True, env=env
    )
    result: dict[str, float] = json.loads(found.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(command[:3])} ... failed:\n{result['err']}")
    return result


def data(work: Path, n: int) -> tuple[Path, Path]:
    """The synthetic corpus and vectors of N passages under WORK (made once)."""
    corpus, vectors = work / f"corpus-{n}.jsonl", work / f"vectors-{n}.npy"
    if not corpus.is_file():
        write_corpus(corpus, n)
    if not vectors.is_file():
        write_vectors(vectors, n, 384, default_clusters(n), 0)
    return corpus, vectors


def raw(corpus: Path, vectors: Path, scratch: Path) -> dict[str, float]:
    """The raw job once, into a fresh SCRATCH directory."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    return measure([sys.executable, "-c", RAW, str(corpus), str(vectors), str(scratch)])


def ours(corpus: Path, vectors: Path, scratch: Path, *flags: str, threads: int | None = None) -> dict[str, float]:
    """``needle index --embeddings`` once, into a fresh SCRATCH directory (FLAGS added; THREADS: ``--threads``)."""
    shutil.rmtree(scratch, ignore_errors=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NEEDLE_PROGRESS_INTERVAL": "off"}
    if threads is not None:
        flags = (*flags, "--threads", str(threads))
    command = [str(NEEDLE), "index", str(corpus), "--out", str(scratch), "--embeddings", str(vectors), *flags]
    return measure(command, env)


def main() -> None:
    """Measure raw and ours at --n passages, alternating, and print the best of each with the ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000, help="passages (and vectors)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "needle-build-cost")
    parser.add_argument("--hnsw-threads", help="also build HNSW at these OMP thread counts, e.g. 1,2")
    parser.add_argument("--hnsw-n", type=int, default=100_000, help="passages of the HNSW builds")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    corpus, vectors = data(args.work, args.n)
    runs: dict[str, list[dict[str, float]]] = {"raw": [], "ours": []}
    for round_number in range(args.rounds):
        runs["raw"].append(raw(corpus, vectors, args.work / "raw"))
        runs["ours"].append(ours(corpus, vectors, args.work / "ours"))
        print(f"round {round_number + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.1f} s" for k, v in runs.items()))
    best = {side: [min(r[key] for r in found) for key in ("seconds", "cpu", "peak")] for side, found in runs.items()}
    print(f"\nFlat build from an embeddings file, {args.n:,} x 384 (best of {args.rounds} alternating rounds)")
    print(f"{'':6}{'wall s':>10}{'CPU s':>10}{'peak RSS MB':>14}")
    for side, (seconds, cpu, peak) in best.items():
        print(f"{side:6}{seconds:>10.1f}{cpu:>10.1f}{peak / 2**20:>14.0f}")
    (raw_s, raw_cpu, raw_peak), (our_s, our_cpu, our_peak) = best["raw"], best["ours"]
    print(f"ours / raw: time {our_s / raw_s:.2f}x, CPU {our_cpu / raw_cpu:.2f}x, memory {our_peak / raw_peak:.2f}x "
          f"(+{(our_peak - raw_peak) / 2**20:.0f} MB)")  # fmt: skip
    if args.hnsw_threads:
        corpus, vectors = data(args.work, args.hnsw_n)
        print(f"\nHNSW32 build from an embeddings file, {args.hnsw_n:,} x 384, by OMP threads")
        for threads in [int(t) for t in args.hnsw_threads.split(",")]:
            found = ours(corpus, vectors, args.work / "hnsw", "--index-type", "hnsw", threads=threads)
            print(f"threads {threads}: {found['seconds']:.1f} s, peak RSS {found['peak'] / 2**20:.0f} MB")
    shutil.rmtree(args.work / "raw", ignore_errors=True)
    shutil.rmtree(args.work / "ours", ignore_errors=True)
    shutil.rmtree(args.work / "hnsw", ignore_errors=True)


if __name__ == "__main__":
    main()
