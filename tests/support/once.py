"""Build an expensive test artefact once per test run, however many pytest-xdist workers ask for it.

Under ``pytest -n 2`` every session-scoped fixture runs once per worker. A fixture that writes into a shared place
(the model home, tests/support/model_home.py) must not let two workers write the same directory at once, and a
fixture that only reads what it built (an index, a model) need not build it twice. ``exclusive`` serialises the
builders of one name with a file lock; ``run_dir`` is a directory every worker of this run sees (pytest's base
temporary directory, above the per-worker ones), so a builder that found the work done can reuse it.
"""

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from filelock import FileLock


@contextmanager
def exclusive(where: Path, name: str) -> Iterator[None]:
    """Hold the lock ``WHERE/NAME.lock`` while the body runs: one process builds NAME, the others wait for it."""
    where.mkdir(parents=True, exist_ok=True)
    with FileLock(str(where / f"{name}.lock")):
        yield


def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory shared by all workers of this test run (a plain run's own base temporary directory)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``run_dir/NAME``, made by BUILD(path) in the first worker that asks; later callers get the finished one.

    BUILD writes into ``run_dir/NAME`` itself (an index keeps the paths it was built at); a marker written after BUILD
    returns says it is whole, so no caller uses a half-built NAME and a failed build is redone by the next caller.
    """
    shared = run_dir(tmp_path_factory)
    target, whole = shared / name, shared / f"{name}.whole"
    with exclusive(shared, name):
        if not whole.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            build(target)
            whole.touch()
    return target
