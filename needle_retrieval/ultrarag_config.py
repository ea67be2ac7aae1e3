"""``needle_retrieval.ultrarag_config``, the module name the README gives for Python use of UltraRAG's parameter file.

It lives in ``needle_retrieval.ultrarag.config``; this name hands on its public functions.
"""

from needle_retrieval.ultrarag.build import index_with_config
from needle_retrieval.ultrarag.config import (
    UltraRAGConfig,
    load_config,
    search_target,
    web_search_component,
)
from needle_retrieval.ultrarag.embedder_spec import create_embedders

__all__ = [
    "UltraRAGConfig",
    "create_embedders",
    "index_with_config",
    "load_config",
    "search_target",
    "web_search_component",
]
