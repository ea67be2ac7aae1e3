"""What the `needle` parser and its first checks need, importable without Haystack, torch or numpy.

`needle --help`, `--version`, argument errors and path errors (a missing corpus, a missing directory or one that
is not an index) answer from this module, ``needle.cli_parser`` and ``components.checks`` alone; the modules that
build and search indexes import their defaults from here, so each is defined once.
"""

import argparse
import logging
import os
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from components.checks import MAX_TOP_K
from needle.errors import NeedleError

if TYPE_CHECKING:
    from needle.fusion import FusionSetting

DISTRIBUTION = "needle-retrieval"  # pyproject.toml's [project] name
EXIT_USAGE = 2
MODES = ("dense", "bm25", "hybrid", "rrf")  # rrf: Haystack's DocumentJoiner fusion (Milvus's own RRF on Milvus)
STORES = ("faiss", "milvus")  # faiss: FAISS (+ bm25s with --bm25); milvus: one Milvus collection for every part
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_CHUNK_SIZE = 10_000
# An index directory's live-generation pointer: components.stores.crash_safe_generations.POINTER, named here too
# so a path error needs no store code (tests/test_cli_startup.py checks that the two agree).
INDEX_POINTER = "CURRENT"
# What an index built before generations held at its top level (DIR/needle.json + DIR/dense + DIR/bm25).
LEGACY_MANIFEST = "needle.json"


def needle_version() -> str:
    """The installed distribution's version; a source checkout that was never installed says so."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        from components import __version__

        return f"{__version__} (source checkout, not installed)"


def rebuild_hint(index_dir: Path) -> str:
    """How to repair an index: build it again (the corpus is not stored in it)."""
    return f"rebuild it with `needle index CORPUS --out {index_dir}`"


def check_readable(index_dir: Path) -> None:
    """Refuse a missing directory, a file, or an index of the older layout before looking for generations."""
    if not index_dir.is_dir():
        what = "is a file, not an index directory" if index_dir.exists() else "not found"
        raise NeedleError(f"index directory {what}: {index_dir} (build one with `needle index CORPUS --out DIR`)")
    if not (index_dir / INDEX_POINTER).is_file():
        if (index_dir / LEGACY_MANIFEST).is_file():
            raise NeedleError(
                f"{index_dir} was built by an older needle (DIR/{LEGACY_MANIFEST}, no DIR/{INDEX_POINTER}); "
                f"{rebuild_hint(index_dir)}"
            )
        raise NeedleError(
            f"{index_dir} is not a needle index: {index_dir / INDEX_POINTER} is missing; {rebuild_hint(index_dir)}"
        )


def check_corpus(corpus: Path) -> None:
    """Refuse a corpus path that is not a file. :raises NeedleError: naming it."""
    if not corpus.is_file():
        raise NeedleError(f"corpus not found: {corpus}")


def check_chunk_size(value: object) -> int:
    """The chunk size when it is an integer >= 1. :raises NeedleError: naming --chunk-size and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NeedleError(f"--chunk-size must be an integer >= 1 (documents per chunk), got {value!r}")
    return value


def quiet_lite_logging() -> None:
    """Keep Milvus Lite's and gRPC's logging off stderr: the store's one-line errors say what failed.

    ``milvus_lite.server_manager`` logs the failed start of a locked database with ``logger.exception`` before
    pymilvus raises, and without a handler Python prints that traceback on stderr, above the CLI's one-line
    error. gRPC's C core logs through absl straight to stderr (e.g. "Received a GOAWAY ... too_many_pings"); it
    reads ``GRPC_VERBOSITY`` once, when ``grpc`` is first imported, so the CLI sets it before anything imports
    pymilvus (a value the user set is kept). pymilvus's own loggers are quieted where a store connects
    (``components.stores.milvus.connection.quiet_pymilvus``).
    """
    logging.getLogger("milvus_lite.server_manager").setLevel(logging.CRITICAL)
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")


def int_in(low: int, high: int) -> Callable[[str], int]:
    """argparse type: an integer in [LOW, HIGH]; the error states the range (argparse names the flag)."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {value}")
        return value

    return number


def top_k_number(text: str) -> int:
    """argparse type: hits per query, an integer in [1, MAX_TOP_K] (the range every retriever accepts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer in [1, {MAX_TOP_K}], got {text!r}") from None
    if not 1 <= value <= MAX_TOP_K:
        raise argparse.ArgumentTypeError(f"must be an integer in [1, {MAX_TOP_K}], got {value}")
    return value


def chunk_size_number(text: str) -> int:
    """argparse type: documents per chunk of `needle index`, an integer >= 1."""
    try:
        return check_chunk_size(int(text))
    except (ValueError, NeedleError):
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 (documents per chunk), got {text!r}") from None


def port_number(text: str) -> int:
    """argparse type: a TCP port, 1-65535."""
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port in [1, 65535], got {value}")
    return value


def fusion_option(value: str) -> "FusionSetting":
    """argparse type of ``--fusion FILE|default``: ``needle.fusion.fusion_option``, imported only when the flag is
    given (it reads the file, with the joiners' limits)."""
    from needle import fusion

    return fusion.fusion_option(value)
