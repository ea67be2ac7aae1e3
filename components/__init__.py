"""Haystack components for retrieval and reranking.

Importing this package registers ``components`` with Haystack's deserialization allowlist, so that
``Pipeline.loads`` accepts YAML pipelines that name our component types with no extra flag. The package itself
imports no Haystack (which imports torch): when Haystack is not loaded yet, the registration happens the moment
``haystack.core.serialization_security`` is, so ``import components`` stays cheap for light users (``needle
--help``, ``components.checks``) and the allowlist is set before any pipeline can be loaded, in either order.

``milvus_haystack`` is deliberately not allowlisted: its ``MilvusDocumentStore.from_dict`` and
``MilvusHybridRetriever.from_dict`` import whatever module a serialized ``builtin_function`` or ``reranker``
names and call it, which would let a YAML file run code. Our Milvus components (``components.stores.milvus``,
``components.retrievers.milvus``) build on milvus-haystack's store and serialise only plain settings, so every
Milvus pipeline here loads after ``import components`` alone.
"""

import sys
from collections.abc import Callable, Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

__version__ = "0.2.0"  # the one place the version is defined: pyproject.toml reads it (dynamic)

_SECURITY = "haystack.core.serialization_security"


def _allow(security: ModuleType) -> None:
    """Add ``components`` (and so every submodule) to Haystack's process-wide deserialization allowlist."""
    security.allow_deserialization_module("components")


def _then_allow(run: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
    """A loader's ``exec_module`` that runs the module (RUN), then ``_allow``s it."""

    def exec_then_allow(module: ModuleType) -> None:
        run(module)
        _allow(module)

    return exec_then_allow


class _AllowWhenLoaded(MetaPathFinder):
    """Finds nothing itself: it hands Haystack's allowlist module to the other finders and has its loader call
    ``_allow`` right after the module runs, then leaves ``sys.meta_path``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != _SECURITY:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                run = spec.loader.exec_module
                spec.loader.exec_module = _then_allow(run)  # type: ignore[method-assign,assignment]  # this module's loader only
                return spec
        return None


if _SECURITY in sys.modules:
    _allow(sys.modules[_SECURITY])
elif not any(isinstance(finder, _AllowWhenLoaded) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AllowWhenLoaded())
