"""Call an MCP server's tools with UltraRAG's client library (fastmcp over stdio), as UltraRAG's pipelines do.

This file runs under UltraRAG's python (ULTRARAG_PYTHON), not the tests' (whose ``mcp`` is another major version),
so it imports nothing from this project. It reads one JSON object on stdin::

    {"command": [argv...], "cwd": "...", "calls": [["tool", {arguments}], ...]}

starts ``command`` as an MCP stdio server in ``cwd``, makes the calls in order in one session, and prints one JSON
list: per call, ``{"result": ...}`` (the tool's text answer parsed as JSON, as UltraRAG's client reads it with
``json.loads(result.content[0].text)``; ``null`` for an empty answer) or ``{"error": "..."}`` (the ToolError's
message). Calls after an error still run: the caller decides what a failure means.
"""

import asyncio
import json
import os
import sys
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError


async def call_all(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The answers to SPEC's calls, in order."""
    command = spec["command"]
    transport = StdioTransport(command=command[0], args=command[1:], env=dict(os.environ), cwd=spec.get("cwd"))
    answers: list[dict[str, Any]] = []
    async with Client(transport, timeout=600) as client:
        for tool, arguments in spec["calls"]:
            try:
                result = await client.call_tool(tool, arguments)
            except ToolError as error:
                answers.append({"error": str(error)})
                continue
            text = result.content[0].text if result.content else ""
            answers.append({"result": json.loads(text) if text else None})
    return answers


if __name__ == "__main__":
    print(json.dumps(asyncio.run(call_all(json.load(sys.stdin)))))
