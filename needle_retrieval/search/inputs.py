"""The run-time inputs of one `needle search`, decided once from its flags and its --config file.

`needle search` takes its index, mode, queries, ``top_k`` and query instruction from the command line or from an
UltraRAG parameter file (--config); ``search_inputs`` decides each once, before anything heavy loads, and the
search then opens the index (``needle_retrieval.search.opening``) and feeds every run with them
(``needle_retrieval.pipelines.feed``), as every other entry point does. The parsed arguments are left as they are.

- ``top_k``: --top-k; else ``RUN_DEPTH`` for a --queries run (a TREC run is scored deep); else the file's
  ``top_k``; else ``DEFAULT_TOP_K``.
- The instruction: --query-instruction, as given (``""``: none); else the file's ``query_instruction`` read as
  UltraRAG's (``ultrarag_instruction``: its ``""`` keeps the index's); else None, the index's recorded one.
- The tenant: --tenant T, or None (every document). Once the index is open, ``tenant_filters`` turns it into the
  filter ``{"field": F, "operator": "==", "value": T}`` on the field F the index recorded (``needle index
  --tenant-field``, or a Milvus index's partition key), and ``set_tenant_filters`` gives it to every retriever of the
  search pipeline, so each mode (both sides of a fused one) searches T's documents only. The FAISS and BM25 stores
  answer such a filter from the tenant's rows alone (``components.stores.tenants``), Milvus from its partition.
"""

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.checks import check_queries
from needle_retrieval.defaults import DEFAULT_TOP_K, RUN_DEPTH
from needle_retrieval.errors import NeedleError
from needle_retrieval.pipelines.feed import ultrarag_instruction

if TYPE_CHECKING:
    from needle_retrieval.index.manifest import IndexManifest
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
    tenant: str | None = None  # --tenant: search only this tenant's documents; None: every document


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
        index_dir, mode, queries, top_k_of(args, batch, config), instruction_of(args, config), batch, config,
        getattr(args, "tenant", None),
    )  # fmt: skip


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


def tenant_field_of(manifest: "IndexManifest") -> str | None:
    """The field a tenant is told apart by in the index of MANIFEST: the recorded ``tenant_field`` (`needle index
    --tenant-field`), else a Milvus index's partition key as ``meta.KEY``; None when it records neither."""
    if manifest.tenant_field is not None:
        return manifest.tenant_field
    key = (manifest.store_settings or {}).get("partition_key_field")
    return f"meta.{key}" if isinstance(key, str) else None


def tenant_filters(manifest: "IndexManifest", tenant: str, index_dir: Path, given: str = "--tenant") -> dict[str, Any]:
    """The Haystack filter that keeps TENANT's documents of the index of MANIFEST (at INDEX_DIR).

    :param given: What named the tenant, for the error (a flag, or a served request's field ``tenant``).
    :raises NeedleError: The index records no tenant field, saying how to build one that does.
    """
    field = tenant_field_of(manifest)
    if field is None:
        raise NeedleError(
            f"{given}: index {index_dir} records no tenant field; rebuild it with `needle index CORPUS --out "
            f"{index_dir} --tenant-field meta.KEY` (with --store milvus: --partition-key KEY)"
        )
    return {"field": field, "operator": "==", "value": tenant}


def set_tenant_filters(data: dict[str, Any], filters: dict[str, Any]) -> None:
    """Give FILTERS to every retriever of the search pipeline DATA (each component with a document store), on top
    of filters it already has (both must hold)."""
    for spec in data["components"].values():
        params = spec.get("init_parameters") or {}
        if "document_store" not in params:
            continue
        own = params.get("filters")
        params["filters"] = filters if not own else {"operator": "AND", "conditions": [own, filters]}
        spec["init_parameters"] = params
