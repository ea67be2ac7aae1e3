"""The run-time inputs of one `needle search`, decided once from its flags and its --config file.

`needle search` takes its index, mode, queries, ``top_k`` and query instruction from the command line or from an
UltraRAG parameter file (--config); ``search_inputs`` decides each once, before anything heavy loads, and the
search then opens the index (``needle_retrieval.search.opening``) and feeds every run with them
(``needle_retrieval.pipelines.feed``), as every other entry point does. The parsed arguments are left as they are.

- ``top_k``: --top-k; else ``RUN_DEPTH`` for a --queries run (a TREC run is scored deep); else the file's
  ``top_k``; else ``DEFAULT_TOP_K``.
- The instruction: --query-instruction, as given (``""``: none); else the file's ``query_instruction`` read as
  UltraRAG's (``ultrarag_instruction``: its ``""`` keeps the index's); else None, the index's recorded one.
"""

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from components.checks import check_queries
from needle_retrieval.defaults import DEFAULT_TOP_K, RUN_DEPTH
from needle_retrieval.errors import NeedleError
from needle_retrieval.pipelines.feed import ultrarag_instruction

if TYPE_CHECKING:
    from needle_retrieval.search.runs import BatchRun
    from needle_retrieval.ultrarag.config import UltraRAGConfig


@dataclass(frozen=True)
class SearchInputs:
    """What one `needle search` searches, and with what."""

    index_dir: Path
    mode: str | None  # None: the index's best mode (``needle_retrieval.search.opening.best_mode``)
    queries: list[str]  # QUERY... (empty for a --queries run, whose file holds them)
    top_k: int
    instruction: str | None  # None: the index's recorded one; "": none
    batch: "BatchRun | None"  # the --queries run, or None
    config: "UltraRAGConfig | None"  # the --config file, or None


def search_inputs(args: argparse.Namespace) -> SearchInputs:
    """Decide `needle search`'s inputs from ARGS by the rules of the module docstring; the queries are checked here.

    :raises NeedleError: No query, a query a search would refuse, or a --config or --queries file that cannot be
        used (each naming what to give).
    """
    from needle_retrieval.search.runs import batch_run

    batch = batch_run(args)  # --queries FILE: read and checked before anything heavy loads
    index_dir, queries, mode, config = Path(args.index_dir), list(args.queries), args.mode, None
    if args.config is not None:  # the file names the index; the first positional is a query
        from needle_retrieval.ultrarag.config import load_config, search_target

        config = load_config(Path(args.config))
        index_dir, file_mode = search_target(config)
        queries, mode = [args.index_dir, *args.queries], mode or file_mode
    if batch is None and not queries:
        raise NeedleError("the following arguments are required: QUERY (or --queries FILE)")
    if batch is None:
        check_queries(queries, "QUERY")  # before loading anything: one rule for every mode
    return SearchInputs(
        index_dir, mode, queries, top_k_of(args, batch, config), instruction_of(args, config), batch, config
    )


def top_k_of(args: argparse.Namespace, batch: "BatchRun | None", config: "UltraRAGConfig | None") -> int:
    """--top-k, else a --queries run's ``RUN_DEPTH``, else the --config file's ``top_k``, else ``DEFAULT_TOP_K``."""
    if args.top_k is not None:
        return int(args.top_k)
    if batch is not None:
        return RUN_DEPTH
    return config.top_k if config is not None else DEFAULT_TOP_K


def instruction_of(args: argparse.Namespace, config: "UltraRAGConfig | None") -> str | None:
    """--query-instruction as given, else the --config file's read as UltraRAG's, else None (the index's own)."""
    if args.query_instruction is not None:
        return str(args.query_instruction)
    if config is not None:
        return ultrarag_instruction(str(config.spec.settings.get("query_instruction") or ""))
    return None
