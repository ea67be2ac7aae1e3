"""UltraRAG's retriever parameter file read as needle settings: backends, stores, web search, and `needle index
--config`."""
