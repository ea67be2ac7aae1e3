"""The ``needle`` command-line tool and the application logic behind it (indexing, search, evaluation).

``from needle import Searcher, build_index`` works, but importing the package loads neither (nor Haystack, nor
torch): each name is imported on first use, so `needle --help` and the CLI's argument checks stay light. The
deserialization allowlist is set by ``import components``, which every module that loads a pipeline does.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = ["FusionSetting", "IndexManifest", "NeedleError", "Searcher", "build_index"]

# Each public name and the module that defines it.
_HOMES = {
    "FusionSetting": "needle.pipelines.fusion",
    "IndexManifest": "needle.index.manifest",
    "NeedleError": "needle.errors",
    "Searcher": "needle.search.searcher",
    "build_index": "needle.index.build",
}

if TYPE_CHECKING:
    from needle.errors import NeedleError
    from needle.index.build import build_index
    from needle.index.manifest import IndexManifest
    from needle.pipelines.fusion import FusionSetting
    from needle.search.searcher import Searcher


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'needle' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
