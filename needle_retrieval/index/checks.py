"""The first checks of an index command's arguments, importable without Haystack, torch or numpy.

`needle --help`, argument errors and path errors (a missing corpus, a missing directory or one that is not an
index) answer from this module, ``needle_retrieval.cli.parser`` and ``components.checks`` alone.
"""

import re
from pathlib import Path

from needle_retrieval.defaults import INDEX_POINTER
from needle_retrieval.errors import NeedleError

# What an index directory may hold without its pointer (a build that never switched, or a lost pointer): `needle
# index --out` rebuilds over these, and refuses a directory holding anything else.
_LEFT_BY_A_BUILD = re.compile(r"gen-\d{6}(\.partial)?|LOCK|fusion\.json|\..*\.tmp|(CURRENT|fusion\.json)\.tmp")


def rebuild_hint(index_dir: Path) -> str:
    """How to repair an index: build it again (the corpus is not stored in it)."""
    return f"rebuild it with `needle index CORPUS --out {index_dir}`"


def check_readable(index_dir: Path) -> None:
    """Refuse a missing directory, a file, or a directory without the live-generation pointer (not an index)
    before looking for generations."""
    if not index_dir.is_dir():
        what = "is a file, not an index directory" if index_dir.exists() else "not found"
        raise NeedleError(f"index directory {what}: {index_dir} (build one with `needle index CORPUS --out DIR`)")
    if not (index_dir / INDEX_POINTER).is_file():
        others = sorted(p.name for p in index_dir.iterdir() if not _LEFT_BY_A_BUILD.fullmatch(p.name))
        hint = (
            rebuild_hint(index_dir)
            if not others
            else f"it holds other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}), so build "
            f"one into a new or empty directory: `needle index CORPUS --out NEW_DIR`"
        )
        raise NeedleError(f"{index_dir} is not a needle index: {index_dir / INDEX_POINTER} is missing; {hint}")


def check_corpus(corpus: Path) -> None:
    """Refuse a corpus path that is not a file. :raises NeedleError: naming it."""
    if not corpus.is_file():
        raise NeedleError(f"corpus not found: {corpus}")


def check_chunk_size(value: object) -> int:
    """The chunk size when it is an integer >= 1. :raises NeedleError: naming --chunk-size and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NeedleError(f"--chunk-size must be an integer >= 1 (documents per chunk), got {value!r}")
    return value
