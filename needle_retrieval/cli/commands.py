"""`needle`: build, search and evaluate retrieval indexes made of Haystack pipelines.

    needle index CORPUS --out DIR [--model M] [--overwrite | --embeddings FILE.npy] [--bm25 [--lang LANG]] [--no-dense]
                [--store faiss|milvus [--uri http://HOST:PORT] [--collection NAME]] [--chunk-size N]
                [--index-type flat|hnsw|sq8|hnsw-sq8|ivf-flat|ivf-sq8|ivf-pq [--hnsw-m M] [--ef-construction N]
                 [--ef-search N] [--nlist N] [--nprobe N] [--pq-m M]]
                [--batch-size N] [--threads N]
    needle search DIR QUERY... [--top-k K] [--min-score X] [--mode dense|bm25|hybrid|rrf] [--fusion FILE|default]
                [--query-instruction TEXT] [--json] [--batch-size N] [--threads N]
    needle search DIR --queries FILE [--output RUN.trec|RUN.jsonl] [--run-tag T] [--top-k K] [--min-score X] [--json]
    needle index --config parameter.yaml [--out DIR] [--batch-size N] [--threads N]
    (needle_retrieval.ultrarag.config) needle search --config parameter.yaml QUERY... [--top-k K] [--mode M]
                [--query-instruction TEXT] [--json]
    needle eval DATASET_DIR [--mode dense|bm25|hybrid|rrf | --pipeline FILE.yaml] [--store faiss|milvus] [--split test]
                [--json FILE] [--plot FILE.png] [--run-file FILE] [--compare A.json B.json ...]
                [--fusion FILE|default] [--latency-queries N]
    needle tune DATASET_DIR [--split train] [--model M] [--index-dir DIR] [--json FILE] [--out FILE | --reset]
                (fit the hybrid fusion and install it, write it to FILE only, or undo it)
    needle serve DIR [--host H] [--port P] [--reranker MODEL_DIR] [--fusion FILE|default] [--tenant T]
                (POST /<mode>_search/run, /mcp, /search, /rerank)
    needle mcp [--config parameter.yaml]   (UltraRAG's retriever MCP tools on stdio, index-building tools included)
    needle pipelines list [--json] | show NAME   (the YAML pipelines the package ships, to read, edit and load)

User errors (missing corpus, missing or broken index, wrong model, bad corpus line, a bad query or --top-k,
an --out that is a file, read-only or someone else's directory, another `needle index` writing the same
directory) print one line on stderr and exit with status 2; set NEEDLE_DEBUG=1 to see the traceback instead.
"""

import argparse
import atexit
import gc
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from needle_retrieval.cli.index_command import cmd_index
from needle_retrieval.cli.options import EXIT_USAGE, limit_threads, quiet_lite_logging
from needle_retrieval.cli.parser import parser
from needle_retrieval.defaults import QUERY_BATCH
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import check_readable

if TYPE_CHECKING:
    from needle_retrieval.index.trust import Trust
    from needle_retrieval.ultrarag.config import UltraRAGConfig

EXIT_BROKEN_PIPE = 141  # what a shell reports for a command killed by SIGPIPE, as `cat` or `grep` would be
Command = Callable[[argparse.Namespace], None]


def cmd_search(args: argparse.Namespace) -> None:
    """Answer queries from an index directory; text for people, --json for scripts. The inputs are decided once
    (``needle_retrieval.search.inputs``: queries, index path, ``top_k``, the instruction) before the search modules
    are imported, and transformers is imported only for a mode with a model.

    With --config, the file names the index, its mode, top_k (unless --top-k) and the query instruction (unless
    --query-instruction): the file's `query_instruction` replaces the one the index recorded, and an empty one keeps
    the recorded one, as an UltraRAG request's empty instruction does on `needle serve`'s /search."""
    from needle_retrieval.search.inputs import search_inputs

    given = search_inputs(args)
    check_readable(given.index_dir)
    limit_threads(args.threads)
    if given.mode != "bm25":
        quiet_model_loading()
    from needle_retrieval.search.hits import as_hits
    from needle_retrieval.search.runs import search_in_batches
    from needle_retrieval.search.searcher import Searcher

    searcher = Searcher(
        given.index_dir, given.mode, given.top_k, model=args.model, fusion=args.fusion,
        query_instruction=given.instruction, bm25_threads=args.threads, trust=trust_of(args, given.config),
        nprobe=args.nprobe, ef_search=args.ef_search, min_score=args.min_score, tenant=given.tenant,
    )  # fmt: skip
    size = args.batch_size or QUERY_BATCH
    try:
        if given.batch is not None:
            given.batch.write(searcher, size)
            return
        results = list(search_in_batches(searcher, given.queries, size))
    finally:
        searcher.close()
    if args.json:
        print(json.dumps([as_hits(docs) for docs in results], ensure_ascii=False))
        return
    for query, docs in zip(given.queries, results, strict=True):
        print(f"\n{query}  [{searcher.mode}]")
        for rank, doc in enumerate(docs, 1):
            snippet = " ".join((doc.content or "").split())[:110]
            print(f"  {rank:>2}. {doc.score:8.4f}  {doc.id}  {snippet}")
        if not docs:
            print("   (no results)")


def trust_of(args: argparse.Namespace, config: "UltraRAGConfig | None" = None) -> "Trust":
    """What the user allows the index's pipelines to use (``needle_retrieval.index.trust``): the NEEDLE_* variables,
    the flags, and what a --config file names for its own backend (the user's file)."""
    from needle_retrieval.index.trust import Trust, config_trust

    flags = Trust(tuple(args.trust_remote_code), tuple(args.allow_server), tuple(args.allow_key_env))
    trust = Trust.from_environment().merged(flags)
    return trust if config is None else trust.merged(config_trust(config.spec, config.target.uri))


def quiet_model_loading() -> None:
    """No "Loading weights" bar above the answers (transformers leaves this function unannotated)."""
    import transformers.utils.logging

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated upstream


def cmd_eval(args: argparse.Namespace) -> None:
    """Score a retrieval setup on a BEIR split; print a table, optionally save JSON, a plot, a TREC run."""
    from needle_retrieval.eval import EvalResult, format_table, load_results, plot

    results: list[EvalResult] = load_results(args.compare) if args.compare else []
    if args.dataset_dir:
        from needle_retrieval.eval.command import evaluate

        result = evaluate(
            Path(args.dataset_dir),
            split=args.split,
            mode=args.mode,
            store=args.store,
            model=args.model,
            pipeline=Path(args.pipeline) if args.pipeline else None,
            index_dir=Path(args.index_dir) if args.index_dir else None,
            name=args.name,
            run_file=Path(args.run_file) if args.run_file else None,
            fusion=args.fusion,
            latency_queries=args.latency_queries,
        )
        if args.json:
            result.save(args.json)
        results.append(result)
    if not results:
        raise NeedleError("nothing to evaluate: give a DATASET_DIR, or --compare with result files")
    print(format_table(results))
    if args.plot:
        plot(results, args.plot)
        print(f"plot written to {args.plot}")


def cmd_serve(args: argparse.Namespace) -> None:
    """Serve an index directory's search pipelines over HTTP (this process becomes the server)."""
    from needle_retrieval.serve.server import serve

    serve(
        Path(args.index_dir),
        host=args.host,
        port=args.port,
        cors_origins=args.cors_origin or [],
        reranker=args.reranker,
        reranker_max_batch=args.reranker_max_batch,
        deploy_search=args.allow_deploy_search,
        fusion=args.fusion,
        trust=trust_of(args),
        ultrarag_mode=args.ultrarag_mode,
        tenant=args.tenant,
    )


def cmd_tune(args: argparse.Namespace) -> None:
    """`needle tune` (``needle_retrieval.tune.command``): fit the hybrid fusion and install it, write it to --out only,
    or --reset."""
    from needle_retrieval.tune.command import cmd_tune as tune

    tune(args)


def cmd_mcp(args: argparse.Namespace) -> None:
    """UltraRAG's retriever MCP server on stdio over the index a parameter file (or retriever_init) describes."""
    if args.drop_in:
        from needle_retrieval.ultrarag.dropin import DROPIN

        print(DROPIN, end="")
        return
    from needle_retrieval.serve.mcp_stdio import run_stdio

    run_stdio(Path(args.config) if args.config else None)


def cmd_pipelines(args: argparse.Namespace) -> None:
    """`needle pipelines list|show`: the shipped YAML pipelines (``needle_retrieval.pipelines.shipped``)."""
    from needle_retrieval.pipelines.shipped import print_list, print_pipeline

    if args.pipelines_command == "show":
        print_pipeline(args.name)
    else:
        print_list(as_json=args.json)


COMMANDS: dict[str, Command] = {
    "index": cmd_index,
    "search": cmd_search,
    "eval": cmd_eval,
    "serve": cmd_serve,
    "mcp": cmd_mcp,
    "tune": cmd_tune,
    "pipelines": cmd_pipelines,
}
# Haystack's DocumentStoreError (in user_error) covers DirectoryLockedError (another writer) and damaged store files;
# OSError a full disk, a read-only place or a missing file.
LIGHT_USER_ERRORS = (NeedleError, ValueError, OSError)


def user_error(error: BaseException) -> BaseException | None:
    """The user-facing error behind ERROR: pipelines wrap a component's error in PipelineRuntimeError. An error
    raised before Haystack was imported cannot be one of its types, so Haystack is not imported to tell."""
    if "haystack" not in sys.modules:
        return error if isinstance(error, LIGHT_USER_ERRORS) else None
    from haystack.core.errors import PipelineRuntimeError
    from haystack.document_stores.errors import DocumentStoreError

    while isinstance(error, PipelineRuntimeError) and error.__cause__ is not None:
        error = error.__cause__
    return error if isinstance(error, (*LIGHT_USER_ERRORS, DocumentStoreError)) else None


def run_cli(func: Command, args: argparse.Namespace) -> int:
    """Run a sub-command, turning user errors into one line on stderr."""
    try:
        func(args)
    except BrokenPipeError:  # the reader closed stdout early (`needle search ... | head`): it wants no more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        return EXIT_BROKEN_PIPE
    except Exception as raised:
        e = user_error(raised)
        if e is None or os.environ.get("NEEDLE_DEBUG"):
            raise
        message = " ".join(str(e).split())
        print(f"needle: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def settle_before_teardown() -> None:
    """At exit, collect the garbage there is (its finalizers run, its files flush), then freeze what is left.

    The interpreter's teardown otherwise walks the object graphs of torch, numba and Haystack in collection after
    collection while it clears the modules: about 1 s of a BM25 search's wall, half of it beyond what a bare
    ``import haystack`` pays (benchmarks/bench_startup.py). Frozen objects are still freed by their reference
    counts; only the cycles among them are left to the process's end, as Python's shutdown does not promise more.
    """
    gc.collect()
    gc.freeze()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `needle` console script."""
    atexit.unregister(settle_before_teardown)  # once per process, however often main runs (tests call it)
    atexit.register(settle_before_teardown)
    args = parser().parse_args(argv)
    quiet_lite_logging()
    return run_cli(COMMANDS[args.command], args)
