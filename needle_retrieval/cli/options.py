"""The argparse types of the `needle` parser and the CLI's first settings, importable without Haystack or torch.

`needle --help`, `--version` and argument errors answer from this module, ``needle_retrieval.cli.parser``,
``needle_retrieval.defaults``, ``needle_retrieval.index.checks`` and ``components.checks`` alone.
"""

import argparse
import logging
import math
import os
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from components.checks import MAX_QUERIES, MAX_QUERY_CHARS, MAX_TOP_K, check_unicode, parse_decimal, shown
from components.stores.tenant_fields import tenant_field_problem, tenant_value_problem  # light: a regex
from needle_retrieval.defaults import DISTRIBUTION
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import check_chunk_size

if TYPE_CHECKING:
    from needle_retrieval.pipelines.fusion import FusionSetting

EXIT_USAGE = 2
CONFIG_HELP = (
    "UltraRAG's retriever parameter.yaml (backend, backend_configs, index_backend; relative paths from the working "
    "directory, as UltraRAG reads them)"
)


def needle_version() -> str:
    """The installed distribution's version; a source checkout that was never installed says so."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        from components import __version__

        return f"{__version__} (source checkout, not installed)"


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
            value = parse_decimal(text)  # past 4,300 digits: an OverlongInt, refused below by its size
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {shown(text)}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {value}")
        return value

    return number


# argparse type: hits per query, the range every retriever accepts (components.checks.check_top_k's).
top_k_number = int_in(1, MAX_TOP_K)
MAX_EMBED_BATCH = 65_536  # texts (images) per encode batch: the image embedder's own limit, the largest of any
# argparse types: `needle index --batch-size` (texts per encode batch) and `needle search --batch-size` (queries per
# pipeline run, at most what one run takes: components.checks.MAX_QUERIES).
embed_batch_number = int_in(1, MAX_EMBED_BATCH)
query_batch_number = int_in(1, MAX_QUERIES)


def instruction_text(text: str) -> str:
    """argparse type of --query-instruction: any text up to a query's size, valid Unicode; ``""`` is kept (it means
    no instruction, ``needle_retrieval.pipelines.feed``)."""
    if len(text) > MAX_QUERY_CHARS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_QUERY_CHARS:,} characters, got {len(text):,}")
    try:
        check_unicode(text, "the instruction")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


MAX_THREADS = 1024
thread_number = int_in(1, MAX_THREADS)  # argparse type of --threads
# What OpenMP (torch's and FAISS's, and FAISS's OpenBLAS), MKL and OpenBLAS read once, when they load.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def limit_threads(threads: int | None) -> None:
    """`--threads N`: the CPU threads of this process's torch (encoding) and FAISS (search, HNSW build) work.

    Nothing is imported for it, so a BM25 search still loads no model library: the environment variables
    ``THREAD_VARIABLES`` are set for the libraries that load later in this process (torch and FAISS read them when
    they load), and a library that is loaded already (a caller's, or a test's) is told through its own setter
    (``torch.set_num_threads``, ``faiss.omp_set_num_threads``). BM25 scoring is the BM25 retrievers' ``n_threads``
    (``needle_retrieval.search.searcher.Searcher``'s ``bm25_threads``): numba's own thread pool is never used, as the
    BM25 kernels are serial and the retrievers split a batch over Python threads. None (no flag): the libraries' own.
    """
    if threads is None:
        return
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    faiss = sys.modules.get("faiss")
    if faiss is not None:
        faiss.omp_set_num_threads(threads)


def score_number(text: str) -> float:
    """argparse type of `needle search --min-score`: a finite number, negative ones too (scores of some modes are),
    as every ``score_threshold`` takes (``components.checks.check_score_threshold``)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number (a score), got {shown(text)}")
    return value


def chunk_size_number(text: str) -> int:
    """argparse type: documents per chunk of `needle index`, an integer >= 1."""
    try:
        return check_chunk_size(int(text))
    except (ValueError, NeedleError):
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 (documents per chunk), got {shown(text)}") from None


def port_number(text: str) -> int:
    """argparse type: a TCP port, 1-65535."""
    try:
        value = parse_decimal(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a TCP port in [1, 65535], got {shown(text)}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port in [1, 65535], got {value}")
    return value


def fusion_option(value: str) -> "FusionSetting":
    """argparse type of ``--fusion FILE|default``: ``needle_retrieval.pipelines.fusion.fusion_option``, imported only
    when the flag is given (it reads the file, with the joiners' limits)."""
    from needle_retrieval.pipelines import fusion

    return fusion.fusion_option(value)


def tenant_field_flag(text: str) -> str:
    """``--tenant-field``'s value, checked (``components.stores.tenant_fields``)."""
    problem = tenant_field_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def tenant_flag(text: str) -> str:
    """``--tenant``'s value, checked (``components.stores.tenant_fields``)."""
    problem = tenant_value_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def add_threads_flag(command: argparse.ArgumentParser, work: str) -> None:
    """``--threads N`` (``limit_threads``): the CPU threads of this command's WORK."""
    command.add_argument(
        "--threads",
        type=thread_number,
        metavar="N",
        help=f"CPU threads for {work}, 1-{MAX_THREADS} (default: every core; torch and FAISS follow "
        "OMP_NUM_THREADS when it is set)",
    )
