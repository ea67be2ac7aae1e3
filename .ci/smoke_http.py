"""Package smoke check: the servers of the installed wheel, ``needle serve`` and ``hayhooks run``, over HTTP.

Run by ``.ci/package_smoke.sh`` (which starts and stops the servers) with the smoke venv's Python::

    python smoke_http.py wait BASE_URL --pid PID --timeout S --pipelines a,b   # /status lists the pipelines
    python smoke_http.py ultrarag BASE_URL QUERY...                           # POST /search, UltraRAG's body
    python smoke_http.py mcp BASE_URL QUERY                                   # MCP tools/list + retriever_search
    python smoke_http.py hayhooks BASE_URL PIPELINE QUERY                     # POST /PIPELINE/run

Each prints one line (what it found) and exits 0, or exits 1 with the reason. HTTP is the standard library's; MCP
is the official SDK's client (``mcp``, from the ``serve`` extra) over streamable HTTP.
"""

import argparse
import asyncio
import http.client
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

REQUEST_TIMEOUT_S = 120.0
POLL_S = 0.5
TOP_K = 3
MCP_TOOL = "retriever_search"  # UltraRAG's retriever tool


def request(base: str, method: str, path: str, payload: object = None, timeout: float = REQUEST_TIMEOUT_S) -> Any:
    """Send one request (PAYLOAD as JSON) to the server at BASE and return its JSON answer; SystemExit unless 200."""
    where = urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=timeout)
    try:
        body = None if payload is None else json.dumps(payload).encode()
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        answer = conn.getresponse()
        text = answer.read()
    finally:
        conn.close()
    if answer.status != 200:
        raise SystemExit(f"{method} {path}: HTTP {answer.status}: {text[:500]!r}")
    return json.loads(text)


def alive(pid: int) -> bool:
    """Whether process PID runs (a zombie, exited but not yet reaped by the shell, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait(base: str, pid: int, timeout: float, pipelines: set[str]) -> str:
    """Wait until the server PID answers GET /status listing PIPELINES; SystemExit if it exits or the time is up."""
    start = time.monotonic()
    last = "no answer yet"
    while time.monotonic() - start < timeout:
        if not alive(pid):
            raise SystemExit(f"the server (pid {pid}) exited before it answered; last: {last}")
        try:
            status = request(base, "GET", "/status", timeout=5)
            listed = set(status.get("pipelines") or [])
            if pipelines <= listed:
                return f"answered after {time.monotonic() - start:.1f} s, /status lists {', '.join(sorted(listed))}"
            last = f"/status lists {sorted(listed)}"
        except (OSError, SystemExit, ValueError) as error:
            last = str(error)[:300]
        time.sleep(POLL_S)
    raise SystemExit(f"the server did not list {sorted(pipelines)} within {timeout:.0f} s; last: {last}")


def ultrarag(base: str, queries: list[str]) -> str:
    """POST /search as UltraRAG's retriever_deploy_search does; one list of TOP_K passages per query."""
    answer = request(base, "POST", "/search", {"query_list": queries, "top_k": TOP_K})
    found = answer.get("ret_psg")
    if not isinstance(found, list) or len(found) != len(queries):
        raise SystemExit(f"/search: expected ret_psg with {len(queries)} lists, got {json.dumps(answer)[:500]}")
    for query, passages in zip(queries, found, strict=True):
        if (
            not isinstance(passages, list)
            or len(passages) != TOP_K
            or not all(isinstance(p, str) and p for p in passages)
        ):
            raise SystemExit(f"/search: expected {TOP_K} passages for {query!r}, got {json.dumps(passages)[:500]}")
    firsts = [passages[0].split("\n", 1)[0] for passages in found]
    return f"/search answered {len(found)} x {TOP_K} passages, best: {', '.join(firsts)}"


async def mcp_check(base: str, query: str) -> str:
    """List the tools of BASE/mcp with the SDK's client, then call retriever_search with QUERY."""
    async with (
        streamable_http_client(f"{base}/mcp") as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = sorted(tool.name for tool in (await session.list_tools()).tools)
        if MCP_TOOL not in names:
            raise SystemExit(f"MCP tools/list has no {MCP_TOOL}: {names}")
        result = await session.call_tool(MCP_TOOL, {"query_list": [query], "top_k": TOP_K})
    if result.is_error:
        raise SystemExit(f"MCP {MCP_TOOL} failed: {result.content}")
    passages = (result.structured_content or {}).get("ret_psg")
    if not passages or len(passages[0]) != TOP_K:
        raise SystemExit(f"MCP {MCP_TOOL}: expected {TOP_K} passages, got {result.structured_content}")
    return f"MCP tools/list: {', '.join(names)}; {MCP_TOOL} answered {len(passages[0])} passages"


def hayhooks(base: str, pipeline: str, query: str) -> str:
    """POST /PIPELINE/run as Hayhooks serves it; Hayhooks' {"result": {component: {"documents": [...]}}}."""
    answer = request(base, "POST", f"/{pipeline}/run", {"query": query})
    result = answer.get("result")
    documents = [doc for output in (result or {}).values() for doc in (output.get("documents") or [])]
    if not documents:
        raise SystemExit(f"/{pipeline}/run returned no documents: {json.dumps(answer)[:500]}")
    return f"/{pipeline}/run answered {len(documents)} documents, best {documents[0].get('id')}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    waiting = sub.add_parser("wait", help="wait until /status lists the pipelines")
    waiting.add_argument("base")
    waiting.add_argument("--pid", type=int, required=True, help="the server's process, which must stay alive")
    waiting.add_argument("--timeout", type=float, default=120.0)
    waiting.add_argument("--pipelines", default="", help="comma-separated names /status must list")
    search = sub.add_parser("ultrarag", help="POST /search")
    search.add_argument("base")
    search.add_argument("queries", nargs="+")
    tools = sub.add_parser("mcp", help="MCP tools/list and a retriever_search call")
    tools.add_argument("base")
    tools.add_argument("query")
    run = sub.add_parser("hayhooks", help="POST /PIPELINE/run")
    run.add_argument("base")
    run.add_argument("pipeline")
    run.add_argument("query")
    args = parser.parse_args()
    if args.command == "wait":
        line = wait(args.base, args.pid, args.timeout, {name for name in args.pipelines.split(",") if name})
    elif args.command == "ultrarag":
        line = ultrarag(args.base, args.queries)
    elif args.command == "mcp":
        line = asyncio.run(mcp_check(args.base, args.query))
    else:
        line = hayhooks(args.base, args.pipeline, args.query)
    print(line)


if __name__ == "__main__":
    main()
