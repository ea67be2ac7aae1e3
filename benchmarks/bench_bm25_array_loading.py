"""A loaded BM25 store's arrays read into memory (ours) against memory-mapped (before): load time, resident memory,
search latency, and what a change to a file underneath a loaded store does to each.

Why: a mapping shows whatever is later written to its file, and the numba kernels index with the arrays' values,
so a served index whose ``indices.csc.index.npy`` was rewritten in place (or through a hard link `needle tune`
made) died of SIGSEGV, and one whose file was truncated of SIGBUS. The ways out measured here:

- ``read`` (ours): ``persistence.load_array`` as the store loads now, the file read into memory of its own;
- ``mmap``: ``np.load(mmap_mode="r")``, a shared mapping, as the store loaded before;
- ``private``: ``np.load(mmap_mode="c")``, a private (copy-on-write) mapping: another process' writes still show
  in every page this one has not written, which it never does.

(Bounds re-checked inside the kernel over a mapping is not a side: a truncated file kills it with SIGBUS all the
same, as the ``survives`` column shows for both mappings.) Each side runs in a fresh child process per round, its
loader installed over ``segment_files.load_array``; everything else is the store's own code: open and warm up
(``BM25DocumentStore.warm_up``: digests, checks, numba kernels from their cache), then one ``bm25_retrieval``
per query, twice (the first pass reads each hit's document from disk, the second finds most of them decoded).
Resident memory is the child's after the searches minus its own before the store opened. Rounds rotate the order
of the sides; each figure is the median over rounds.

Documents: a hit's line read with ``os.pread`` (ours, since a truncated file under a mapping is SIGBUS too)
against a slice of a memory mapping, decoding included, over the same random rows.

Survives: on a copy of the SciFact store, each side opens and searches, then ``indices.csc.index.npy`` is
rewritten in place (same inode and size, every row number 2**30) or truncated, and the child searches again.

    .venv/bin/python benchmarks/bench_bm25_array_loading.py [--size small|large] [--passages N] [--work DIR]

``small``: SciFact (5,183 passages) and 100,000 synthetic ones (``benchmarks/synthetic_corpus.py``); ``large``:
500,000. Indexes are built once with ``needle index CORPUS --bm25 --no-dense`` under ``--work``.
"""

import argparse
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from _timing import paired_ratio, rotating_rounds  # noqa: E402
from synthetic_corpus import queries as synthetic_queries  # noqa: E402
from synthetic_corpus import write_corpus  # noqa: E402

SCIFACT = Path(os.environ.get("NEEDLE_SCIFACT", "/work/shared/data/scifact"))
SIDES = ("read", "mmap", "private")
PASSAGES = {"small": 100_000, "large": 500_000}
ROUNDS = 3
QUERIES = 300
DOCUMENT_ROWS = 5_000

CHILD = r"""
import json, os, sys, time
from pathlib import Path
import numpy as np

def status():
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {name: int(fields[name].split()[0]) * 1024 for name in ("VmRSS", "RssAnon", "RssFile")}

side, store_path, queries_file, damage = sys.argv[1:5]
from haystack import Document
from components.stores.bm25 import segment_files
from components.stores.bm25.document_store import BM25DocumentStore

if side != "read":
    def mapped(path, dtype, length=None):
        array = np.load(path, mmap_mode="r" if side == "mmap" else "c", allow_pickle=False)
        assert array.dtype == np.dtype(dtype) and (length is None or len(array) == length)
        return array
    segment_files.load_array = mapped
warm = BM25DocumentStore()  # the kernels loaded from numba's cache before the clock starts
warm.write_documents([Document(id="a", content="warm up kernels"), Document(id="b", content="kernels")])
warm.warm_up()
warm.bm25_retrieval("kernels", filters={"field": "id", "operator": "==", "value": "a"})
queries = json.loads(Path(queries_file).read_text())
base = status()
start = time.perf_counter()
store = BM25DocumentStore(path=store_path)
store.warm_up()
load = time.perf_counter() - start
if damage != "none":
    store.bm25_retrieval(queries[0])
    file = Path(store_path) / (Path(store_path) / "CURRENT").read_text().strip() / "indices.csc.index.npy"
    with open(file, "r+b") as handle:
        if damage == "truncate":
            handle.truncate(0)
        else:
            handle.seek(128)
            handle.write(np.full((file.stat().st_size - 128) // 4, 2**30, dtype=np.int32).tobytes())
    store.bm25_retrieval(queries[1])
    print(json.dumps({"survived": True}))
    sys.exit(0)
passes = []
for _ in range(2):
    times = []
    for query in queries:
        t = time.perf_counter()
        store.bm25_retrieval(query, top_k=10)
        times.append(time.perf_counter() - t)
    passes.append(float(np.median(times)))
after = status()
print(json.dumps({"load": load, "first": passes[0], "repeat": passes[1],
                  "rss": after["VmRSS"] - base["VmRSS"], "anon": after["RssAnon"] - base["RssAnon"],
                  "file": after["RssFile"] - base["RssFile"]}))
"""


def child(side: str, store: Path, queries_file: Path, damage: str = "none") -> dict[str, Any]:
    """One child process' figures (or, DAMAGE given, whether it survived: a negative code is the signal)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NUMBA_NUM_THREADS": "1"}
    argv = [sys.executable, "-c", CHILD, side, str(store), str(queries_file), damage]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if damage != "none":
        return {"survived": done.returncode == 0, "code": done.returncode}
    if done.returncode != 0:
        raise RuntimeError(f"{side} on {store} failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def built(corpus: Path, out: Path) -> Path:
    """The BM25 store of ``needle index CORPUS --bm25 --no-dense --out OUT``, built unless OUT holds one."""
    if not (out / "CURRENT").exists():
        argv = [sys.executable, "-m", "needle_retrieval.cli", "index", str(corpus), "--bm25", "--no-dense"]
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        subprocess.run([*argv, "--out", str(out)], cwd=REPO, env=env, check=True, capture_output=True)
    return out / (out / "CURRENT").read_text().strip() / "bm25"


def medians(store: Path, queries_file: Path, rounds: int) -> dict[str, dict[str, float]]:
    """Per side, the median over ROUNDS of each figure, the sides' order rotating from round to round."""
    figures: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for number in range(rounds):
        for side in SIDES[number % len(SIDES) :] + SIDES[: number % len(SIDES)]:
            figures[side].append(child(side, store, queries_file))
    return {side: {key: statistics.median(f[key] for f in runs) for key in runs[0]} for side, runs in figures.items()}


def document_reads(store: Path, rounds: int) -> tuple[float, float]:
    """Microseconds per document read and decoded with pread (ours) and from a mapping, over the same rows."""
    from components.stores.bm25.document_table import decode_line, read_line

    generation = store / (store / "CURRENT").read_text().strip()
    path = generation / "documents.jsonl"
    offsets = np.load(generation / "documents.offsets.npy")
    ids = json.loads((generation / "ids.json").read_text())
    rows = np.random.default_rng(0).choice(len(ids), size=min(DOCUMENT_ROWS, len(ids)), replace=False).tolist()
    fd = os.open(path, os.O_RDONLY)
    mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    try:

        def by_pread() -> None:
            for row in rows:
                read_line(fd, (int(offsets[row]), int(offsets[row + 1])), row, ids[row], str(path))

        def by_mapping() -> None:
            for row in rows:
                decode_line(mapped[int(offsets[row]) : int(offsets[row + 1])], row, ids[row], str(path))

        times = rotating_rounds(rounds, [by_pread, by_mapping])
    finally:
        mapped.close()
        os.close(fd)
    per = 1e6 / len(rows)
    return statistics.median(times[0]) * per, paired_ratio(times, 0, over=1)


def survival(store: Path, queries_file: Path) -> dict[str, str]:
    """Per side, what an in-place rewrite and a truncation of ``indices.csc.index.npy`` did to a loaded store."""
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as work:
        for side in SIDES:
            outcomes = []
            for damage in ("rewrite", "truncate"):
                copy = Path(work) / f"{side}-{damage}"
                shutil.copytree(store, copy)
                result = child(side, copy, queries_file, damage)
                outcomes.append(f"{damage} ok" if result["survived"] else f"{damage} killed ({result['code']})")
            found[side] = ", ".join(outcomes)
    return found


def corpus_rows(name: str, store: Path, queries: list[str], rounds: int) -> list[dict[str, Any]]:
    """The rows of one corpus: load, resident memory and search latency, ours (read) against mmap, private noted."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(queries, handle)
    queries_file = Path(handle.name)
    try:
        figures = medians(store, queries_file, rounds)
    finally:
        queries_file.unlink()
    mib, ms = 2**20, 1e3
    read, mapped, private = figures["read"], figures["mmap"], figures["private"]
    rss_note = f"anon/file MiB: read {read['anon'] / mib:.0f}/{read['file'] / mib:.0f}, "
    rss_note += f"mmap {mapped['anon'] / mib:.0f}/{mapped['file'] / mib:.0f}, private {private['rss'] / mib:.0f} in all"
    return [
        row(f"{name}: open + warm up", read["load"], mapped["load"], "s", f"private {private['load']:.3f} s"),
        row(f"{name}: resident after searches", read["rss"] / mib, mapped["rss"] / mib, "MiB", rss_note),
        row(
            f"{name}: search p50, first pass",
            read["first"] * ms,
            mapped["first"] * ms,
            "ms",
            f"private {private['first'] * ms:.3f} ms",
        ),
        row(
            f"{name}: search p50, repeated",
            read["repeat"] * ms,
            mapped["repeat"] * ms,
            "ms",
            f"private {private['repeat'] * ms:.3f} ms",
        ),
    ]


def row(benchmark: str, ours: float, peer: float, unit: str, note: str) -> dict[str, Any]:
    """One result row in the shape benchmarks/run.py collects (ratio = ours / peer, the peer being mmap)."""
    return {"benchmark": benchmark, "ours": ours, "peer": peer, "unit": unit, "ratio": ours / peer, "note": note}


def run(
    size: str = "small", passages: int | None = None, work: Path | None = None, rounds: int = ROUNDS
) -> list[dict[str, Any]]:
    """Every row: SciFact and the synthetic corpus, documents read, and what survives a change underneath."""
    n = passages or PASSAGES[size]
    with tempfile.TemporaryDirectory() as scratch:
        base = work or Path(scratch)
        base.mkdir(parents=True, exist_ok=True)
        scifact = built(SCIFACT / "corpus.jsonl", base / "scifact")
        lines = (SCIFACT / "queries.jsonl").read_text().splitlines()[:QUERIES]
        scifact_queries = [json.loads(line)["text"] for line in lines]
        corpus = base / f"synthetic-{n}.jsonl"
        if not corpus.exists():
            write_corpus(corpus, n)
        synthetic = built(corpus, base / f"synthetic-{n}")
        rows = corpus_rows("SciFact", scifact, scifact_queries, rounds)
        rows += corpus_rows(f"synthetic {n:,}", synthetic, synthetic_queries(QUERIES, corpus_size=n), rounds)
        micro, ratio = document_reads(synthetic, 5)
        rows.append(row(f"synthetic {n:,}: a hit's document read + decoded", micro, micro / ratio, "µs", "pread/mmap"))
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(scifact_queries, handle)
        try:
            outcomes = survival(scifact, Path(handle.name))
        finally:
            Path(handle.name).unlink()
        rows.append(
            {
                "benchmark": "SciFact: indices rewritten / truncated under a loaded store",
                "ours": None,
                "peer": None,
                "unit": "-",
                "ratio": None,
                "note": "; ".join(f"{side}: {what}" for side, what in outcomes.items()),
            }
        )
    return rows


def main() -> None:
    """CLI: print the rows (ratio = read / mmap)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(PASSAGES), default="small")
    parser.add_argument("--passages", type=int, help="synthetic passages (default: 100,000 small, 500,000 large)")
    parser.add_argument("--work", type=Path, help="keep corpora and indexes here (built when missing)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"child processes per side (default {ROUNDS})")
    args = parser.parse_args()
    for r in run(args.size, args.passages, args.work, args.rounds):
        figures = "" if r["ours"] is None else f"{r['ours']:>10.3f} vs {r['peer']:>10.3f} {r['unit']:4} "
        ratio = "" if r["ratio"] is None else f"ratio {r['ratio']:>5.2f}  "
        print(f"{r['benchmark']:55} {figures}{ratio}{r['note']}")


if __name__ == "__main__":
    main()
