"""benchmarks/tiny_models.py's seeded random BERT builder for tests (benchmarks/ is not a package: load by path)."""

import importlib.util
from types import ModuleType

from tests.support.paths import REPO

BUILDER = REPO / "benchmarks" / "tiny_models.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tiny_models", BUILDER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_bert = _module().build_bert
