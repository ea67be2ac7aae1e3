"""The ``needle`` command-line tool and the application logic behind it (indexing, search, evaluation).

``from needle_retrieval import Searcher, build_index`` works, but importing the package loads neither (nor Haystack, nor
torch): each name is imported on first use, so `needle --help` and the CLI's argument checks stay light. The
deserialization allowlist is set by ``import components``, which every module that loads a pipeline does.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = ["FusionSetting", "IndexManifest", "NeedleError", "Searcher", "Trust", "build_index"]

# Each public name and the module that defines it.
_HOMES = {
    "FusionSetting": "needle_retrieval.pipelines.fusion",
    "IndexManifest": "needle_retrieval.index.manifest",
    "NeedleError": "needle_retrieval.errors",
    "Searcher": "needle_retrieval.search.searcher",
    "Trust": "needle_retrieval.index.trust",
    "build_index": "needle_retrieval.index.build",
}

if TYPE_CHECKING:
    from needle_retrieval.errors import NeedleError
    from needle_retrieval.index.build import build_index
    from needle_retrieval.index.manifest import IndexManifest
    from needle_retrieval.index.trust import Trust
    from needle_retrieval.pipelines.fusion import FusionSetting
    from needle_retrieval.search.searcher import Searcher


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'needle_retrieval' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
