"""Memory and time of reading every document of a saved index: page by page against ``filter_documents``.

Issue 36, item 5: ``iter_document_pages`` hands back a store's documents a page at a time, so a job that walks the
whole corpus (an export, a re-embedding) holds one page, where ``filter_documents`` holds every document at once.
Each side runs in a fresh process of its own, opens the store of an index ``needle index`` built (the FAISS store
at ``GEN/dense``, the BM25 store at ``GEN/bm25``, which reads the FAISS store's documents), reads every document
(or those a filter keeps) and prints the process's memory just after opening, its peak during the read (VmHWM,
reset after opening), and the wall time of the read. Run it at two corpus sizes: the paged peak over the opened
store stays the same, ``filter_documents``' grows with the corpus.

    python benchmarks/synthetic_corpus.py --passages 1000000 --out /tmp/pg/c.jsonl --seed 0
    python benchmarks/synthetic_vectors.py --n 1000000 --dim 384 --out /tmp/pg/v.npy
    needle index /tmp/pg/c.jsonl --out /tmp/pg/index --embeddings /tmp/pg/v.npy --bm25
    python benchmarks/document_pages_memory.py --index /tmp/pg/index [--stores faiss,bm25] [--filter]

Prints, never asserts.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SIDES = ("pages", "filter_documents")
# A filter every synthetic passage passes (no title is "-"): the worst case for memory, and the filter's own cost.
FILTER = {"field": "meta.title", "operator": "!=", "value": "-"}


def open_store(index: Path, kind: str) -> Any:
    """The saved store of KIND in INDEX's live generation, opened as a search opens it."""
    generation = index / (index / "CURRENT").read_text().strip()
    if kind == "faiss":
        from components.stores.faiss.document_store import FAISSDocumentStore

        return FAISSDocumentStore(path=str(generation / "dense"))
    from components.stores.bm25.document_store import BM25DocumentStore

    return BM25DocumentStore(path=str(generation / "bm25"), document_store_path=str(generation / "dense"))


def child(index: Path, kind: str, side: str, filtered: bool, page_size: int) -> dict[str, Any]:
    """One side's read, in this (fresh) process."""
    store = open_store(index, kind)
    total = store.count_documents()  # opens the saved files
    opened_kb = _status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) restarts from here: the read's own peak
    filters = FILTER if filtered else None
    start = time.perf_counter()
    count = chars = 0
    if side == "pages":
        for page in store.iter_document_pages(filters, page_size=page_size):
            count += len(page)
            chars += sum(len(d.content or "") for d in page)
    else:
        documents = store.filter_documents(filters)
        count, chars = len(documents), sum(len(d.content or "") for d in documents)
    seconds = time.perf_counter() - start
    peak_kb = _status_kb("VmHWM")
    return {"store": kind, "side": side, "documents": total, "read": count, "chars": chars, "seconds": seconds,
            "opened_mb": opened_kb / 1024, "peak_mb": peak_kb / 1024}  # fmt: skip


def _status_kb(field: str) -> int:
    """FIELD of this process's /proc status (VmRSS: resident now; VmHWM: peak since the last reset), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def run_side(args: argparse.Namespace, kind: str, side: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "--index", str(args.index), "--child", f"{kind}:{side}"]
    command += ["--page-size", str(args.page_size)] + (["--filter"] if args.filter else [])
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{kind} {side} failed:\n{done.stderr[-3000:]}")
    out = done.stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index built by needle index (dense + bm25)")
    parser.add_argument("--stores", default="faiss,bm25")
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--filter", action="store_true", help="read under a filter (one every document passes)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, side = args.child.split(":")
        print(json.dumps(child(args.index, kind, side, args.filter, args.page_size)))
        return
    print(f"{'store':6} {'side':17} {'docs':>9} {'read':>9} {'seconds':>8} {'opened MB':>10} {'peak MB':>8} "
          f"{'over open':>9}")  # fmt: skip
    for kind in args.stores.split(","):
        rows = {side: run_side(args, kind, side) for side in SIDES}
        for side, r in rows.items():
            over = r["peak_mb"] - r["opened_mb"]
            print(f"{kind:6} {side:17} {r['documents']:9d} {r['read']:9d} {r['seconds']:8.1f} "
                  f"{r['opened_mb']:10.0f} {r['peak_mb']:8.0f} {over:9.0f}")  # fmt: skip
        pages, everything = rows["pages"], rows["filter_documents"]
        if (pages["read"], pages["chars"]) != (everything["read"], everything["chars"]):
            print(f"{kind}: the sides read different documents: {pages} {everything}")
        print(f"{kind}: pages / filter_documents: time {pages['seconds'] / everything['seconds']:.2f}x, "
              f"memory over the opened store {(pages['peak_mb'] - pages['opened_mb']):.0f} MB vs "
              f"{(everything['peak_mb'] - everything['opened_mb']):.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
