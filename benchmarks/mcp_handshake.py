"""The MCP start-up handshake of `needle mcp` beside a bare interpreter's start (and UltraRAG's own retriever).

    python benchmarks/mcp_handshake.py [--rounds N] [--config parameter.yaml]
    ULTRARAG_SRC=/path/to/UltraRAG ULTRARAG_PYTHON=/path/to/venv/bin/python python benchmarks/mcp_handshake.py

A host launching a local MCP server waits for it to answer ``initialize`` and ``tools/list``; hosts time out slow
servers. Each side is started as a fresh process and timed from its start to the ``tools/list`` answer, speaking
newline-delimited JSON-RPC on its stdin and stdout as an MCP host does (protocol version 2025-06-18, what
UltraRAG's client sends); ``python -c pass`` is timed to its exit. The sides run in rotating order round after
round, after one untimed run each, so a busy stretch of a shared machine slows them alike and none always runs
first. Printed: each side's median wall time, the median over rounds of its difference from and ratio to ``python
-c pass`` in the same round (issue 33 asks the handshake to come within 1 s of it), and the median CPU seconds of
the whole process (start to exit, user + system): on a loaded machine the wall times grow, the CPU times less.

Sides: `needle mcp` without a file (as UltraRAG's client starts it through the drop-in), `needle mcp --config`
on UltraRAG HEAD's parameter.yaml (tests/data), and, when ULTRARAG_SRC names UltraRAG's source, its own retriever
server (``servers/retriever/src/retriever.py``, run by ULTRARAG_PYTHON, default ``python``).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
HEAD_PARAMETERS = REPO / "tests" / "data" / "ultrarag_parameter.yaml"
PROTOCOL = "2025-06-18"
TIMEOUT_S = 120


def needle_command() -> list[str]:
    """The `needle` command: NEEDLE if set, else the script beside this interpreter."""
    return [os.environ.get("NEEDLE") or str(Path(sys.executable).parent / "needle")]


def send(stream: IO[bytes], message: dict[str, Any]) -> None:
    """One JSON-RPC message on its own line."""
    stream.write(json.dumps(message).encode() + b"\n")
    stream.flush()


def answer(stream: IO[bytes], request_id: int) -> dict[str, Any]:
    """The response to REQUEST_ID (notifications and log lines before it are skipped)."""
    while line := stream.readline():
        message = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"the server refused request {request_id}: {message['error']}")
            return dict(message["result"])
    raise RuntimeError("the server closed stdout before answering (run it by hand to see why)")


def handshake(argv: list[str], cwd: Path, listed: list[int]) -> float:
    """Start ARGV, initialize, list its tools (their number appended to LISTED), close it; the seconds from the
    start to the tools/list answer."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        send(server.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        answer(server.stdout, 1)
        send(server.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(server.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = answer(server.stdout, 2)["tools"]
        seconds = time.perf_counter() - start
        listed.append(len(tools))
        server.stdin.close()
        try:
            server.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
    return seconds


def bare_start() -> float:
    """``python -c pass``: the interpreter's own start, the floor of any Python server; its seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def sides(config: Path, listed: dict[str, list[int]]) -> dict[str, Callable[[], float]]:
    """The timed sides, by row name (the floor first); each returns its seconds, and appends its tool count to
    LISTED[its name]."""
    commands = {
        "needle mcp": ([*needle_command(), "mcp"], REPO),
        "needle mcp --config": ([*needle_command(), "mcp", "--config", str(config)], REPO),
    }
    source = os.environ.get("ULTRARAG_SRC")
    if source:
        python = os.environ.get("ULTRARAG_PYTHON", "python")
        server = Path(source) / "servers" / "retriever" / "src" / "retriever.py"
        commands["UltraRAG retriever"] = ([python, str(server)], Path(source))
    named: dict[str, Callable[[], float]] = {"python -c pass": bare_start}
    for name, (argv, cwd) in commands.items():
        named[name] = partial(handshake, argv, cwd, listed.setdefault(name, []))
    return named


def children_cpu() -> float:
    """User + system CPU seconds of every child process this one has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rotate(rounds: int, named: dict[str, Callable[[], float]]) -> dict[str, list[tuple[float, float]]]:
    """(seconds, CPU seconds) of every side in each of ROUNDS rounds, after one untimed run each; within a round
    the sides run back to back, starting one further along from round to round."""
    for side in named.values():
        side()
    names = list(named)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for round_number in range(rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            before = children_cpu()
            seconds = named[name]()
            runs[name].append((seconds, children_cpu() - before))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of every side (default 7)")
    parser.add_argument("--config", type=Path, default=HEAD_PARAMETERS, help="the parameter.yaml of --config")
    args = parser.parse_args()
    listed: dict[str, list[int]] = {}
    started = time.perf_counter()
    runs = rotate(args.rounds, sides(args.config, listed))
    floor = [seconds for seconds, _ in runs["python -c pass"]]
    print(f"{'side':<22} {'median s':>9} {'- pass s':>9} {'/ pass':>7} {'CPU s':>7}   ({args.rounds} rounds)")
    for name, timed in runs.items():
        walls, cpus = [seconds for seconds, _ in timed], [cpu for _, cpu in timed]
        over = statistics.median(w - f for w, f in zip(walls, floor, strict=True))
        ratio = statistics.median(w / f for w, f in zip(walls, floor, strict=True))
        tools = f"   {sorted(set(listed[name]))} tools listed" if name in listed else ""
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"{name:<22} {wall:>9.3f} {over:>9.3f} {ratio:>7.1f} {cpu:>7.3f}{tools}")
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
