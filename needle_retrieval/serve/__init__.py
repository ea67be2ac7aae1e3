"""`needle serve` and `needle mcp`: the REST routes, UltraRAG's ``/search``, the MCP tools, the reranker routes and
the Hayhooks wrapper that `needle index` writes beside each search pipeline."""
