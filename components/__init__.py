"""Haystack components for retrieval and reranking.

Importing this package registers ``components`` with Haystack's deserialization allowlist, so that
``Pipeline.loads`` accepts YAML pipelines that name our component types with no extra flag.
"""

from haystack.core.serialization_security import allow_deserialization_module

allow_deserialization_module("components")

__version__ = "0.1.0"
