"""Run every ``benchmarks/bench_*.py`` and write one markdown table of our speed against the peers'.

Each benchmark module exposes ``run(size: str = "small") -> list[dict]``, rows shaped like::

    {"benchmark": str, "ours": float, "peer": float | None, "unit": str, "ratio": float | None, "note": str}

where ``ratio`` is ours / peer (computed here when the module leaves it out). A module that fails to
import, raises, or returns malformed rows does not stop the others: it gets an error row in the table,
its traceback goes to stderr, and the exit status is 1. Usage::

    python benchmarks/run.py [--size small|large] [--only NAME ...] [--out benchmarks/results/RESULTS.md]

NAME is the module name with or without ``bench_`` (``faiss`` or ``bench_faiss``). Modules run in this
process one after another, in name order, so the numbers are not disturbed by each other.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH_DIR / "results" / "RESULTS.md"
SIZES = ("small", "large")
COLUMNS = ("Module", "Benchmark", "Ours", "Peer", "Unit", "Ours / peer", "Note")


@dataclass
class Outcome:
    """What one benchmark module produced: its rows, how long it ran, and the error if it failed."""

    module: str
    seconds: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def discover(bench_dir: Path) -> dict[str, Path]:
    """Map short names (``faiss``) to the ``bench_*.py`` files of ``bench_dir``, sorted by name."""
    return {path.stem.removeprefix("bench_"): path for path in sorted(bench_dir.glob("bench_*.py"))}


def select(available: dict[str, Path], only: list[str]) -> dict[str, Path]:
    """Keep the modules named in ``only`` (all when empty); an unknown name is a ValueError."""
    if not only:
        return available
    wanted = [name.removeprefix("bench_") for item in only for name in item.split(",") if name]
    unknown = [name for name in wanted if name not in available]
    if unknown:
        raise ValueError(f"--only: unknown benchmark {unknown[0]!r}; available: {', '.join(available) or 'none'}")
    return {name: available[name] for name in available if name in wanted}


def load_module(name: str, path: Path) -> ModuleType:
    """Import a benchmark file by path, with the repo root and the benchmarks dir importable."""
    for folder in (str(path.parent), str(path.parent.parent)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_module(name: str, path: Path, size: str) -> Outcome:
    """Import and run one benchmark module; any failure becomes ``Outcome.error`` instead of a crash."""
    start = time.perf_counter()
    try:
        module = load_module(name, path)
        if not callable(getattr(module, "run", None)):
            raise TypeError(f"{path.name} has no function run(size: str = 'small') -> list[dict]")
        rows = check_rows(module.run(size), path.name)
    except Exception as error:
        traceback.print_exc(file=sys.stderr)
        message = " ".join(str(error).split()) or "(no message)"
        return Outcome(name, time.perf_counter() - start, error=f"{type(error).__name__}: {message}")
    return Outcome(name, time.perf_counter() - start, rows=rows)


def check_rows(rows: Any, source: str) -> list[dict[str, Any]]:
    """Validate the rows a module returned and fill ``ratio`` = ours / peer when it is missing."""
    if not isinstance(rows, list) or not rows:
        raise TypeError(f"{source}: run() must return a non-empty list of dicts, got {type(rows).__name__}")
    checked = []
    for index, row in enumerate(rows):
        where = f"{source}: row {index}"
        if not isinstance(row, dict):
            raise TypeError(f"{where} must be a dict, got {type(row).__name__}")
        for key in ("benchmark", "ours", "unit"):
            if key not in row:
                raise KeyError(f"{where} lacks key {key!r} (rows need benchmark, ours, peer, unit, ratio, note)")
        for key in ("ours", "peer", "ratio"):
            value = row.get(key)
            if value is not None and not isinstance(value, (int, float)):
                raise TypeError(f"{where} key {key!r} must be a number or None, got {value!r}")
        if row["ours"] is None:
            raise TypeError(f"{where} key 'ours' must be a number, got None")
        ratio = row.get("ratio")
        if ratio is None and row.get("peer"):
            ratio = row["ours"] / row["peer"]
        checked.append({**row, "peer": row.get("peer"), "ratio": ratio, "note": str(row.get("note", ""))})
    return checked


def format_markdown(outcomes: list[Outcome], size: str) -> str:
    """The RESULTS.md text: where and when it ran, the table, and each module's run time."""
    lines = [
        "# Benchmark results",
        "",
        f"Size `{size}`, run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()} "
        f"with {os.cpu_count()} CPU cores, Python {platform.python_version()}. "
        "Ours / peer > 1 means ours is higher: faster for throughput, slower for latency units.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for outcome in outcomes:
        lines += [_markdown_row(outcome.module, row) for row in outcome.rows]
        if outcome.error:
            lines.append(_markdown_row(outcome.module, {"benchmark": "**ERROR**", "note": outcome.error}))
    lines += ["", "Time per module: " + ", ".join(f"{o.module} {o.seconds:.1f} s" for o in outcomes) + "."]
    failed = [o.module for o in outcomes if o.error]
    if failed:
        lines += ["", f"Failed: {', '.join(failed)} (tracebacks on stderr)."]
    return "\n".join(lines) + "\n"


def _markdown_row(module: str, row: dict[str, Any]) -> str:
    ratio = row.get("ratio")
    cells = [
        module,
        str(row["benchmark"]),
        _number(row.get("ours")),
        _number(row.get("peer")),
        str(row.get("unit", "")),
        "-" if ratio is None else f"{ratio:.2f}x",
        str(row.get("note", "")),
    ]
    return "| " + " | ".join(" ".join(cell.replace("|", "\\|").split()) for cell in cells) + " |"


def _number(value: float | None) -> str:
    """Readable magnitude: thousands separators for big numbers, 3 significant digits for small ones."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the selected modules, print and write the table; 1 if any module failed."""
    parser = argparse.ArgumentParser(description="Run benchmarks/bench_*.py and tabulate ours vs peer.")
    parser.add_argument("--size", choices=SIZES, default="small", help="small: < ~60 s per module; large: by hand")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this module (repeatable)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"markdown output (default {DEFAULT_OUT})")
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR, help="folder holding bench_*.py")
    args = parser.parse_args(argv)
    available = discover(args.bench_dir)
    if not available:
        parser.error(f"no bench_*.py files in {args.bench_dir}")
    try:
        chosen = select(available, args.only)
    except ValueError as error:
        parser.error(str(error))
    outcomes = []
    for name, path in chosen.items():
        print(f"[bench] {name} ({args.size}) ...", file=sys.stderr, flush=True)
        outcomes.append(run_module(name, path, args.size))
    text = format_markdown(outcomes, args.size)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 1 if any(outcome.error for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
