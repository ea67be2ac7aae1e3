"""``cached_jit``: numba's ``njit`` with its on-disk cache where numba finds a writable place, so that a process
after the first loads the BM25 kernels (``kernels``, ``scoring``) from disk instead of compiling them again."""

from collections.abc import Callable
from typing import Any

import numba


def cached_jit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(**options)`` with the on-disk cache when numba finds a writable place for it, without otherwise.

    numba keeps the cache in ``__pycache__`` beside the module, or under the user's cache directory when that is
    read-only, or in ``NUMBA_CACHE_DIR`` when set; with no writable place the function is compiled per process.
    """

    def decorate(function: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError:  # "cannot cache function ...: no locator available": compile per process instead
            return numba.njit(**options)(function)

    return decorate
