"""Haystack components for retrieval and reranking.

Importing this package registers ``components`` with Haystack's deserialization allowlist, so that
``Pipeline.loads`` accepts YAML pipelines that name our component types with no extra flag.

``milvus_haystack`` is deliberately not allowlisted: its ``MilvusDocumentStore.from_dict`` and
``MilvusHybridRetriever.from_dict`` import whatever module a serialized ``builtin_function`` or ``reranker``
names and call it, which would let a YAML file run code. Our Milvus components (``components.stores.milvus``,
``components.retrievers.milvus``) build on milvus-haystack's store and serialise only plain settings, so every
Milvus pipeline here loads after ``import components`` alone.
"""

from haystack.core.serialization_security import allow_deserialization_module

allow_deserialization_module("components")

__version__ = "0.1.0"
