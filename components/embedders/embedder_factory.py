"""The old home of UltraRAG's embedding-backend schema, kept so that code written against it still runs.

UltraRAG's `backend_configs` schema is the application's configuration, not a component's: it lives in
``needle_retrieval.ultrarag.embedder_spec`` (``create_embedders`` is also on the public face
``needle_retrieval.ultrarag_config``). The component library keeps only the registry of embedder classes
(``components.embedders.embedder_roles``). Every name this module used to define is still found here, with a
DeprecationWarning naming its new home; this is the one place the component library reaches into the
application, and only when such a name is asked for.
"""

import importlib
import warnings
from typing import Any

NEW_HOMES = {
    "needle_retrieval.ultrarag.embedder_spec": (
        "BACKENDS", "ENCODE_OPTIONS", "ENCODE_TYPES", "MACHINE_OPTIONS", "OPTIONS", "SETTINGS", "TYPES",
        "EmbedderSpec", "check_block", "create_embedders", "embedder_spec", "manifest_record",
        "refuse_machine_options",
    ),
    "needle_retrieval.ultrarag.options": (
        "BOOL", "INT", "OPTIONAL_BOOL", "OPTIONAL_INT", "OPTIONAL_MAPPING", "OPTIONAL_NAME", "OPTIONAL_STRING",
        "STRING", "OptionType", "check_options", "check_types", "options_block",
    ),
    "needle_retrieval.ultrarag.bm25_terms": ("BM25_LANGS", "BM25_TOKENIZERS", "bm25_lang", "bm25_tokenizer"),
    "components.embedders.embedder_roles": ("EmbedderRole", "embedder_class"),
}  # fmt: skip
NEW_HOMES_OF = {name: module for module, names in NEW_HOMES.items() for name in names}
__all__ = sorted(NEW_HOMES_OF)


def __dir__() -> list[str]:
    """The names this module still answers for (``from ... import *`` and completion see them)."""
    return __all__


def __getattr__(name: str) -> Any:
    """NAME from its new home, with a DeprecationWarning saying where that is."""
    module = NEW_HOMES_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} moved to {module}.{name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), name)
