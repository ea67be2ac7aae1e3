"""Sizing an index: build and search BM25 and a compressed dense index at 100k, 1M and 5M passages, fit the growth.

Why: users ask whether MS MARCO's 8.8M passages fit their machine. This builds each size through the CLI a user
runs, each build in a process of its own, and prints per part (BM25, dense):

- build: wall seconds of ``needle index CORPUS --out DIR --bm25 --no-dense`` and of ``needle index CORPUS --out DIR
  --embeddings FILE.npy --index-type ivf-sq8`` (the embeddings computed elsewhere: no model encodes the corpus);
- build peak RSS: the maximum of the process tree's summed VmRSS (sampled every 0.2 s) and of the build's own
  ``ru_maxrss`` (``os.wait4``), so a short peak between samples is not missed; beside it the sampled peak of
  RssAnon alone (without the pages of memory-mapped files such as the embeddings ``.npy``, which the kernel can
  drop);
- disk: the index directory (``du``), and its four largest files in ``results.json`` (where the disk goes);
- search: a fresh process opens the index and answers ``QUERIES`` single queries one after another, p50 / p99 in
  ms, and its own peak RSS. BM25 goes through ``Searcher(DIR, "bm25")`` with text queries from
  ``synthetic_corpus.queries``; dense through the index's FAISS retriever given query VECTORS from
  ``synthetic_vectors.make_queries`` (text encoded by a model means nothing against synthetic vectors);
- recall@10 of the dense index against exact search (brute force over the memory-mapped ``.npy``).

Growth is fitted between consecutive sizes as a power law (figure ~ n^b, the log-log slope) and the last slope
extrapolates to 8.8M passages. A watchdog kills a build whose process tree passes ``--max-rss-gb`` and reports it
instead of letting a shared machine swap. Corpora, vectors and results live in ``--work`` and are reused: run the
sizes one at a time and the table gathers all measured so far (``results.json``). Prints, never asserts::

    nice -n 5 .venv/bin/python benchmarks/sizing.py --sizes 100k,1m,5m [--work /tmp/sizing] [--max-rss-gb 16]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import synthetic_corpus
import synthetic_vectors

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere in the checkout

SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000, "5m": 5_000_000}
MS_MARCO = 8_841_823
DIM, TOP_K, SEED, WARM = 384, 10, 0, 10
FIGURES = ("build_s", "build_rss_mb", "build_anon_mb", "disk_mb", "p50_ms", "p99_ms", "search_rss_mb")


def prepare(work: Path, label: str, n: int, queries: int) -> dict[str, Path]:
    """The corpus JSONL, its vectors, the query vectors and their exact top 10 for size LABEL (made once)."""
    paths = {key: work / f"{key}-{label}{ext}" for key, ext in
             (("corpus", ".jsonl"), ("vectors", ".npy"), ("queries", ".npy"), ("exact", ".npy"))}  # fmt: skip
    clusters = synthetic_vectors.default_clusters(n)
    if not paths["corpus"].exists():
        synthetic_corpus.write_corpus(paths["corpus"].with_suffix(".part"), n, SEED).rename(paths["corpus"])
    if not paths["vectors"].exists():
        part = paths["vectors"].with_suffix(".part.npy")
        synthetic_vectors.write_corpus(part, n, DIM, clusters, SEED).rename(paths["vectors"])
    if not paths["exact"].exists():
        asked = synthetic_vectors.make_queries(queries + WARM, DIM, clusters, SEED)
        np.save(paths["queries"], asked)
        np.save(paths["exact"], exact_top(np.load(paths["vectors"], mmap_mode="r"), asked))
    return paths


def exact_top(corpus: np.ndarray, queries: np.ndarray, chunk: int = 100_000) -> np.ndarray:
    """Row numbers of each query's TOP_K largest inner products over CORPUS, scanned CHUNK rows at a time."""
    best_scores = np.full((len(queries), TOP_K), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), TOP_K), dtype=np.int64)
    for first in range(0, len(corpus), chunk):
        scores = queries @ np.asarray(corpus[first : first + chunk]).T
        top = np.argpartition(-scores, TOP_K - 1, axis=1)[:, :TOP_K]
        all_scores = np.hstack([best_scores, np.take_along_axis(scores, top, axis=1)])
        all_rows = np.hstack([best_rows, top + first])
        keep = np.argsort(-all_scores, axis=1)[:, :TOP_K]
        best_scores, best_rows = np.take_along_axis(all_scores, keep, 1), np.take_along_axis(all_rows, keep, 1)
    return best_rows


def tree_rss_kb(root: int) -> tuple[int, int]:
    """Summed VmRSS and RssAnon (kB) of process ROOT and all its descendants, read from /proc (RssAnon leaves out
    the pages of memory-mapped files, e.g. an embeddings .npy read through a map, which the kernel can drop)."""
    parents: dict[int, int] = {}
    rss: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue  # the process ended while we listed
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        parents[int(entry)] = int(fields.get("PPid", "0"))
        rss[int(entry)] = (int(fields.get("VmRSS", "0 kB").split()[0]), int(fields.get("RssAnon", "0 kB").split()[0]))
    family, joined = {root}, {root}
    while joined:  # descendants, generation by generation (a child's pid may be lower than its parent's)
        joined = {pid for pid, parent in parents.items() if parent in joined and pid not in family}
        family |= joined
    found = [rss.get(pid, (0, 0)) for pid in family]
    return sum(r for r, _ in found), sum(a for _, a in found)


def watched(command: list[str], limit_gb: float, log: Path) -> dict[str, Any]:
    """Run COMMAND in its own session: wall seconds, peak RSS (sampled tree and wait4's ru_maxrss), exit status;
    killed (``over``) once the tree passes LIMIT_GB. Its output goes to LOG."""
    start = time.perf_counter()
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    peak, anon, over, done = 0, 0, False, threading.Event()

    def sample() -> None:
        nonlocal peak, anon, over
        while not done.wait(0.2):
            rss, rss_anon = tree_rss_kb(process.pid)
            peak, anon = max(peak, rss), max(anon, rss_anon)
            if rss > limit_gb * 2**20:
                over = True
                os.killpg(process.pid, signal.SIGKILL)
                return

    watchdog = threading.Thread(target=sample, daemon=True)
    watchdog.start()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    done.set()
    watchdog.join()
    rss_mb = max(peak, usage.ru_maxrss) / 1024
    ok = status == 0 and not over
    return {"seconds": seconds, "rss_mb": rss_mb, "anon_mb": anon / 1024, "ok": ok, "over": over, "status": status}


def disk_mb(path: Path) -> float:
    """Disk used by PATH (``du -sk``), MB."""
    return (
        int(subprocess.run(["du", "-sk", str(path)], check=True, capture_output=True, text=True).stdout.split()[0])
        / 1024
    )


def search_bm25(index: Path, n: int, count: int) -> dict[str, Any]:
    """Open INDEX's BM25 part in this process and time COUNT single text queries (after WARM untimed)."""
    from needle_retrieval.search.searcher import Searcher

    searcher = Searcher(index, "bm25", top_k=TOP_K)
    asked = synthetic_corpus.queries(count + WARM, SEED, corpus_size=n)
    return {"ms": timed([lambda q=q: searcher.search([q]) for q in asked])[WARM:]}


def search_dense(index: Path, queries: Path, exact: Path, nprobe: int | None) -> dict[str, Any]:
    """Open INDEX's FAISS retriever (as the dense search pipeline does, without its query embedder; NPROBE as
    ``needle search --nprobe``, None: the index's own) and time single query vectors; recall@10 of its hits
    (corpus line numbers are the ids) against EXACT."""
    import importlib

    from needle_retrieval.index.manifest import IndexManifest
    from needle_retrieval.index.templates import fill_search_pipeline, set_search_time

    manifest = IndexManifest.load(index)
    data = fill_search_pipeline(index, manifest, manifest.template("dense"))
    if nprobe is not None:
        set_search_time(data, manifest, nprobe, None)
    spec = data["components"]["retriever"]
    module, name = spec["type"].rsplit(".", 1)
    retriever = getattr(importlib.import_module(module), name).from_dict(spec)
    if hasattr(retriever, "warm_up"):
        retriever.warm_up()
    vectors = np.load(queries)
    found: list[list[int]] = []

    def ask(vector: np.ndarray) -> None:
        found.append([int(d.id) for d in retriever.run(query_embedding=vector, top_k=TOP_K)["documents"]])

    ms = timed([lambda v=v: ask(v) for v in vectors])
    truth = np.load(exact)
    hits = [len(set(f) & set(t)) / TOP_K for f, t in zip(found[WARM:], truth[WARM:].tolist(), strict=True)]
    return {"ms": ms[WARM:], "recall": float(np.mean(hits))}


def timed(calls: list[Any]) -> list[float]:
    """Milliseconds of each call, one after another."""
    out = []
    for call in calls:
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def measure(part: str, label: str, paths: dict[str, Path], args: argparse.Namespace) -> dict[str, Any]:
    """Build PART (bm25 or dense) of size LABEL through the CLI, then search it in a fresh process."""
    index = args.work / f"index-{label}-{part}"
    subprocess.run(["rm", "-rf", str(index)], check=True)
    needle = str(Path(sys.executable).parent / "needle")
    command = [needle, "index", str(paths["corpus"]), "--out", str(index)]
    command += ["--bm25", "--no-dense"] if part == "bm25" else ["--embeddings", str(paths["vectors"]),
                                                               "--index-type", args.index_type]  # fmt: skip
    build = watched(command, args.max_rss_gb, args.work / f"build-{label}-{part}.log")
    row: dict[str, Any] = {"build_s": build["seconds"], "build_rss_mb": build["rss_mb"],
                           "build_anon_mb": build["anon_mb"], "ok": build["ok"]}  # fmt: skip
    if build["over"]:
        done = re.findall(r"([\d,]+)/[\d,]+ docs", (args.work / f"build-{label}-{part}.log").read_text())
        row["note"] = f"over {args.max_rss_gb:g} GB at {done[-1] if done else '?'} of {SIZES[label]:,} docs: killed"
    if not build["ok"]:
        row.setdefault("note", f"build failed (status {build['status']}), see {args.work}/build-{label}-{part}.log")
        return row
    row["disk_mb"] = disk_mb(index)
    files = sorted(((f.stat().st_size, f.name) for f in index.rglob("*") if f.is_file()), reverse=True)
    row["largest_files_mb"] = {name: size / 2**20 for size, name in files[:4]}  # where the disk goes
    out = args.work / f"search-{label}-{part}.json"
    child = [sys.executable, __file__, "--search", part, "--index", str(index), "--n", str(SIZES[label]),
             "--queries", str(args.queries), "--work", str(args.work), "--result", str(out),
             "--vectors-of", label, *(["--nprobe", str(args.nprobe)] if args.nprobe else [])]  # fmt: skip
    search = watched(child, args.max_rss_gb, args.work / f"search-{label}-{part}.log")
    if not search["ok"]:
        row["note"] = f"search failed (status {search['status']}), see {args.work}/search-{label}-{part}.log"
        return row
    found = json.loads(out.read_text())
    row |= {"p50_ms": float(np.percentile(found["ms"], 50)), "p99_ms": float(np.percentile(found["ms"], 99)),
            "search_rss_mb": search["rss_mb"], "search_anon_mb": search["anon_mb"],
            "recall": found.get("recall")}  # fmt: skip
    if not args.keep:
        subprocess.run(["rm", "-rf", str(index)], check=True)
    return row


def slope(small: tuple[int, float | None], large: tuple[int, float | None]) -> float | None:
    """Exponent b of figure ~ n^b through two (n, figure) points; None where a figure is missing or not positive."""
    (n1, f1), (n2, f2) = small, large
    if f1 is None or f2 is None or f1 <= 0 or f2 <= 0:
        return None
    return math.log(f2 / f1) / math.log(n2 / n1)


def table(results: dict[str, dict[str, Any]]) -> str:
    """Markdown: each part's figures per size, the fitted exponents and the extrapolation to MS MARCO's size."""
    labels = sorted({key.split("/")[0] for key in results}, key=SIZES.__getitem__)
    head = ("| part | passages | build s | build peak RSS MB | of it anonymous MB | disk MB | p50 ms | p99 ms"
            " | search RSS MB | recall@10 |")  # fmt: skip
    lines = [head, "|---" * 10 + "|"]
    for part in ("bm25", "dense"):
        rows = [(SIZES[label], results[f"{label}/{part}"]) for label in labels if f"{label}/{part}" in results]
        for n, row in rows:
            cells = [f"{row[f]:.0f}" if row.get(f) is not None and f != "p50_ms" and f != "p99_ms"
                     else f"{row[f]:.2f}" if row.get(f) is not None else "-" for f in FIGURES]  # fmt: skip
            recall = f"{row['recall']:.3f}" if row.get("recall") is not None else "-"
            note = f" {row['note']}" if "note" in row else ""
            lines.append(f"| {part} | {n:,} | {' | '.join(cells)} | {recall} |{note}")
        done = [(n, row) for n, row in rows if row.get("ok")]
        if len(done) >= 2:
            exps = [slope((done[-2][0], done[-2][1].get(f)), (done[-1][0], done[-1][1].get(f))) for f in FIGURES]
            lines.append(f"| {part} | growth n^b ({done[-2][0]:,} to {done[-1][0]:,}) | "
                         + " | ".join("-" if b is None else f"b={b:.2f}" for b in exps) + " | |")  # fmt: skip
            guess = [None if b is None else done[-1][1][f] * (MS_MARCO / done[-1][0]) ** b
                     for f, b in zip(FIGURES, exps, strict=True)]  # fmt: skip
            lines.append(f"| {part} | {MS_MARCO:,} (extrapolated) | "
                         + " | ".join("-" if g is None else f"{g:.0f}" if g >= 10 else f"{g:.2f}" for g in guess)
                         + " | |")  # fmt: skip
    return "\n".join(lines)


def state() -> str:
    """The checkout's commit and uncommitted change, recorded with every run (the FAISS build path is moving)."""
    root = Path(__file__).resolve().parents[1]
    commit = subprocess.run(
        ["git", "log", "--oneline", "-1"], check=False, cwd=root, capture_output=True, text=True
    ).stdout
    diff = subprocess.run(
        ["git", "diff", "--stat"], check=False, cwd=root, capture_output=True, text=True
    ).stdout.splitlines()
    return f"{commit.strip()[:80]}; uncommitted: {diff[-1].strip() if diff else 'none'}"


def main() -> None:
    """Command line: for each size, generate the data once, build and search both parts, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100k,1m,5m", help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--work", type=Path, default=Path("/tmp/sizing"), help="data, indexes and results.json")
    parser.add_argument("--parts", default="bm25,dense")
    parser.add_argument("--index-type", default="ivf-sq8", help="the dense part's --index-type")
    parser.add_argument("--nprobe", type=int, help="dense searches with this nprobe (default: the index's own)")
    parser.add_argument("--queries", type=int, default=300, help="single queries timed per part")
    parser.add_argument("--max-rss-gb", type=float, default=16.0, help="kill a build whose process tree passes this")
    parser.add_argument("--keep", action="store_true", help="keep the indexes (default: removed once measured)")
    parser.add_argument("--prepare", help=argparse.SUPPRESS)  # internal: generate one size's data in this process
    for internal in ("--search", "--index", "--n", "--result", "--vectors-of"):
        parser.add_argument(internal, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.search:  # internal: the fresh search process
        index, label = Path(args.index), args.vectors_of
        found = (search_bm25(index, int(args.n), args.queries) if args.search == "bm25" else
                 search_dense(index, args.work / f"queries-{label}.npy", args.work / f"exact-{label}.npy",
                              args.nprobe))  # fmt: skip
        Path(args.result).write_text(json.dumps(found, default=str))
        return
    if args.prepare:
        prepare(args.work, args.prepare, SIZES[args.prepare], args.queries)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    saved = args.work / "results.json"
    results = json.loads(saved.read_text()) if saved.exists() else {}
    for label in args.sizes.split(","):
        start = time.perf_counter()
        # in a process of its own: a child's ru_maxrss starts from its parent's RSS at fork, so this one stays small
        common = ["--work", str(args.work), "--queries", str(args.queries)]
        subprocess.run([sys.executable, __file__, "--prepare", label, *common], check=True)
        paths = prepare(args.work, label, SIZES[label], args.queries)  # now only the paths
        print(f"{label}: data ready in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        for part in args.parts.split(","):
            when = {"state": state(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  # as the build starts
            row = measure(part, label, paths, args) | when
            results[f"{label}/{part}"] = row
            saved.write_text(json.dumps(results, indent=1))
            print(f"{label}/{part}: {json.dumps(row)}", file=sys.stderr, flush=True)
    print(
        f"dense: --index-type {args.index_type} from --embeddings; {args.queries} single queries, top {TOP_K};"
        f" sizes fitted as figure ~ n^b between the two largest; MS MARCO = {MS_MARCO:,} passages"
    )
    print(table(results))


if __name__ == "__main__":
    main()
