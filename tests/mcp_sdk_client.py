"""Talk to an MCP server with the mcp SDK's own client: list the tools, call each, call one with a blank query.

Run as a script (``python tests/mcp_sdk_client.py URL``) by an interpreter that has the ``mcp`` package — the
Makefile's ``.venv-mcp``, because mcp and zhipuai cannot share one environment (their pyjwt pins clash). It prints
``{"tools": [...], "found": {tool: [ids]}, "refused": text}`` as JSON. It imports nothing from this repository.
"""

import asyncio
import json
import sys

QUERY = "read and write zip archives"


async def session_report(url: str) -> dict[str, object]:
    """The tools the server lists, the ids each returns for QUERY (top 3), and the text of a refused call."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        tools = sorted(tool.name for tool in (await session.list_tools()).tools)
        found = {}
        for name in tools:
            answer = await session.call_tool(name, {"query": QUERY, "top_k": 3})
            if answer.isError:
                raise SystemExit(f"{name} failed: {answer.content}")
            found[name] = [hit["id"] for hit in json.loads(answer.content[0].text)["documents"]]
        refused = await session.call_tool("bm25_search", {"query": "   "})
        return {"tools": tools, "found": found, "refused": refused.content[0].text if refused.isError else ""}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(session_report(sys.argv[1]))))
