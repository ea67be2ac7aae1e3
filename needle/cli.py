"""`needle`: build, search and evaluate retrieval indexes made of Haystack pipelines.

    needle index CORPUS --out DIR [--model M] [--overwrite] [--bm25 [--lang en|zh]] [--no-dense]
                [--store faiss|milvus [--uri http://HOST:PORT] [--collection NAME]] [--chunk-size N]
                [--index-type flat|hnsw [--hnsw-m M] [--ef-construction N] [--ef-search N]]
    needle search DIR QUERY... [--top-k K] [--mode dense|bm25|hybrid|rrf] [--fusion FILE|default] [--json]
    needle index --config parameter.yaml [--out DIR]    (UltraRAG's retriever file: needle.ultrarag_config)
    needle search --config parameter.yaml QUERY... [--top-k K] [--mode M] [--json]
    needle eval DATASET_DIR [--mode dense|bm25|hybrid|rrf | --pipeline FILE.yaml] [--store faiss|milvus] [--split test]
                [--json FILE] [--plot FILE.png] [--run-file FILE] [--compare A.json B.json ...]
                [--fusion FILE|default] [--latency-queries N]
    needle tune DATASET_DIR [--split train] [--model M] [--index-dir DIR] [--json FILE] [--out FILE | --reset]
                (fit the hybrid fusion and install it, write it to FILE only, or undo it)
    needle serve DIR [--host H] [--port P] [--reranker MODEL_DIR] [--fusion FILE|default]
                (POST /<mode>_search/run, /mcp, /search, /rerank)
    needle mcp --config parameter.yaml   (UltraRAG's retriever MCP tools on stdio, index-building tools included)

User errors (missing corpus, missing or broken index, wrong model, bad corpus line, a bad query or --top-k,
an --out that is a file, read-only or someone else's directory, another `needle index` writing the same
directory) print one line on stderr and exit with status 2; set NEEDLE_DEBUG=1 to see the traceback instead.
"""

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from haystack.document_stores.errors import DocumentStoreError

from components.checks import MAX_TOP_K, check_queries
from needle.fusion import fusion_option
from needle.index_dir import DEFAULT_MODEL, STORES, NeedleError
from needle.index_streaming import DEFAULT_CHUNK_SIZE, check_chunk_size
from needle.search import MODES
from needle.tune import add_parser as add_tune_parser

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # what a shell reports for a command killed by SIGPIPE, as `cat` or `grep` would be
CONFIG_HELP = "UltraRAG's retriever parameter.yaml (backend, backend_configs, index_backend, paths relative to it)"


def cmd_index(args: argparse.Namespace) -> None:
    """Build (or rebuild) an index directory from a corpus JSONL."""
    from needle.dense_index_type import DenseIndexType
    from needle.index_options import IndexOptions
    from needle.indexing import StoreChoice, build_index

    if args.config is not None:
        index_with_config(args)
        return
    if args.corpus is None or args.out is None:
        raise NeedleError("needle index needs CORPUS and --out DIR (or --config parameter.yaml)")
    if args.bm25_tokenizer != "bm25s" and (args.store != "faiss" or not args.bm25):
        raise NeedleError("--bm25-tokenizer needs --bm25 and --store faiss (Milvus's BM25 uses its own analyzers)")
    if args.store == "faiss" and (args.uri is not None or args.collection is not None):
        raise NeedleError("--uri and --collection need --store milvus (FAISS keeps its index inside --out)")
    start = time.perf_counter()
    manifest = build_index(
        Path(args.corpus),
        Path(args.out),
        model=args.model,
        overwrite=args.overwrite,
        dense=not args.no_dense,
        bm25=args.bm25,
        lang=args.lang,
        target=StoreChoice(args.store, args.uri, args.collection),
        multimodal=args.multimodal,
        chunk_size=args.chunk_size,
        index_type=DenseIndexType.from_flags(args.index_type, args.hnsw_m, args.ef_construction, args.ef_search),
        options=IndexOptions(
            duplicate_ids=args.duplicate_ids,
            bm25_tokenizer=None if args.bm25_tokenizer == "bm25s" else args.bm25_tokenizer,
        ),
    )
    took = time.perf_counter() - start
    where = ""
    if manifest.store == "milvus":
        from needle.milvus_index import MilvusPlace

        place = MilvusPlace(str(manifest.uri), str(manifest.collection))
        where = f" (Milvus collection {place.collection} at {place.uri_under(Path(args.out) / manifest.generation)})"
    print(f"indexed {manifest.documents} documents ({', '.join(manifest.modes)}) into {args.out}{where} in {took:.1f}s")


def index_with_config(args: argparse.Namespace) -> None:
    """`needle index --config parameter.yaml [--out DIR]`: UltraRAG's retriever file drives the build."""
    from needle import ultrarag_config

    ultrarag_config.check_no_flags(vars(args))
    start = time.perf_counter()
    manifest, out = ultrarag_config.index_with_config(Path(args.config), Path(args.out) if args.out else None)
    took = time.perf_counter() - start
    print(f"indexed {manifest.documents} documents ({', '.join(manifest.modes)}) into {out} in {took:.1f}s")


def cmd_search(args: argparse.Namespace) -> None:
    """Answer queries from an index directory; text for people, --json for scripts."""
    import transformers.utils.logging

    from needle.index_dir import as_hits
    from needle.search import Searcher

    index_dir, top_k = args.index_dir, args.top_k or 5
    if args.config is not None:  # the file names the index; the first positional is a query
        from needle.ultrarag_config import load_config, search_target

        config = load_config(Path(args.config))
        index_dir, file_mode = search_target(config)
        args.queries, top_k = [args.index_dir, *args.queries], args.top_k or config.top_k
        args.mode = args.mode or file_mode
    if not args.queries:
        raise NeedleError("the following arguments are required: QUERY")
    check_queries(args.queries, "QUERY")  # before loading anything: one rule for every mode
    # No "Loading weights" bar above the answers (transformers leaves this function unannotated).
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated upstream
    searcher = Searcher(Path(index_dir), mode=args.mode, top_k=top_k, model=args.model, fusion=args.fusion)
    try:
        results = searcher.search(args.queries)
    finally:
        searcher.close()
    if args.json:
        print(json.dumps([as_hits(docs) for docs in results], ensure_ascii=False))
        return
    for query, docs in zip(args.queries, results, strict=True):
        print(f"\n{query}  [{searcher.mode}]")
        for rank, doc in enumerate(docs, 1):
            snippet = " ".join((doc.content or "").split())[:110]
            print(f"  {rank:>2}. {doc.score:8.4f}  {doc.id}  {snippet}")
        if not docs:
            print("   (no results)")


def cmd_eval(args: argparse.Namespace) -> None:
    """Score a retrieval setup on a BEIR split; print a table, optionally save JSON, a plot, a TREC run."""
    from needle.eval import EvalResult, format_table, load_results, plot

    results: list[EvalResult] = load_results(args.compare) if args.compare else []
    if args.dataset_dir:
        from needle.eval.command import evaluate

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
    from needle.serve import serve

    serve(
        Path(args.index_dir),
        host=args.host,
        port=args.port,
        cors_origins=args.cors_origin or [],
        reranker=args.reranker,
        reranker_max_batch=args.reranker_max_batch,
        deploy_search=args.allow_deploy_search,
        fusion=args.fusion,
    )


def cmd_mcp(args: argparse.Namespace) -> None:
    """UltraRAG's retriever MCP server on stdio over the index a parameter file describes."""
    from needle.mcp_stdio import run_stdio

    run_stdio(Path(args.config))


def add_fusion_flag(command: argparse.ArgumentParser, what: str) -> None:
    """``--fusion FILE|default`` (``needle.fusion.fusion_option``): the fusion parameters of this run only."""
    command.add_argument(
        "--fusion",
        type=fusion_option,
        metavar="FILE|default",
        help=f"fusion parameters for this {what} only: a file `needle tune --out` wrote, or default (the "
        "rankers' own, whatever DIR/fusion.json holds); default: the index's own (DIR/fusion.json if tuned)",
    )


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2), like every other needle error."""

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message>`` and where to find the usage, then exit with status 2."""
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    p = OneLineParser(prog="needle", description="Retrieval indexes built from Haystack pipelines.")
    sub = p.add_subparsers(dest="command", required=True)

    ix = sub.add_parser("index", help="embed a corpus JSONL and index it (FAISS or Milvus, optionally BM25)")
    ix.add_argument(
        "corpus", nargs="?", help="corpus JSONL (UltraRAG `contents` lines or BEIR `_id`/`title`/`text` lines)"
    )
    ix.add_argument("--out", help="index directory to create, or an index to rebuild (atomically)")
    ix.add_argument("--config", help=CONFIG_HELP + "; --out defaults to the directory of its index path")
    ix.add_argument("--model", default=DEFAULT_MODEL, help=f"sentence-transformers model (default {DEFAULT_MODEL})")
    ix.add_argument("--overwrite", action="store_true", help="re-encode even if the index's embeddings match")
    ix.add_argument(
        "--bm25",
        action="store_true",
        help="also build a BM25 index (with --store milvus: Milvus's BM25 function on the collection, so BM25 "
        "and hybrid search run inside Milvus)",
    )
    ix.add_argument(
        "--duplicate-ids",
        choices=["error", "position"],
        default="error",
        help="a repeated corpus id: error (default), or position (UltraRAG's rule: the repeat becomes ID#LINE and "
        "meta.corpus_id keeps ID)",
    )
    ix.add_argument("--no-dense", action="store_true", help="BM25 only: skip embeddings and FAISS (FAISS store only)")
    ix.add_argument(
        "--multimodal",
        action="store_true",
        help="image corpus: lines name an image_path (relative to the corpus), embedded with a CLIP-style --model "
        "(default sentence-transformers/clip-ViT-B-32); text queries then find the images",
    )
    ix.add_argument(
        "--lang",
        default="en",
        choices=["en", "zh", "character"],
        help="BM25 tokenizer language (milvus: en = Milvus's english analyzer, zh = jieba; no character)",
    )
    ix.add_argument(
        "--bm25-tokenizer",
        default="bm25s",
        choices=["bm25s", "lucene"],
        help="BM25 tokenizer (FAISS store): bm25s (default: --lang's; for en bm25s' own, words of 2+ characters) or "
        "lucene (Lucene's StandardTokenizer: one-character and numeric tokens kept; with --lang en also its English "
        "stop list and Porter stemmer, for Lucene-equal recall); the index records it and every search uses it",
    )
    ix.add_argument(
        "--store",
        default="faiss",
        choices=STORES,
        help="faiss (default): FAISS + bm25s files in DIR; milvus: one Milvus collection for dense and BM25",
    )
    ix.add_argument(
        "--uri",
        help="milvus: a server, http://HOST:PORT (token from MILVUS_TOKEN); default: a Milvus Lite database "
        "inside DIR (DIR/gen-NNNNNN/milvus.db)",
    )
    ix.add_argument(
        "--collection",
        help="milvus: collection name (default needle); on a server each build gets NAME_genNNNNNN and the "
        "alias NAME follows the live one",
    )
    ix.add_argument(
        "--chunk-size",
        type=chunk_size_number,
        default=DEFAULT_CHUNK_SIZE,
        metavar="N",
        help=f"documents read, embedded and written at a time (default {DEFAULT_CHUNK_SIZE:,}): memory stays "
        "bounded by the chunk, not the corpus; the index is the same for any N",
    )
    add_index_type_flags(ix)
    ix.set_defaults(func=cmd_index)

    se = sub.add_parser("search", help="search an index directory")
    se.add_argument("index_dir", help="directory made by `needle index`")
    se.add_argument("queries", nargs="*", metavar="QUERY")
    se.add_argument(
        "--top-k", type=top_k_number, help=f"hits per query, 1-{MAX_TOP_K} (default 5, or top_k of --config)"
    )
    se.add_argument("--config", help=CONFIG_HELP + "; it names the index, so give only QUERY...")
    se.add_argument(
        "--mode",
        choices=MODES,
        help="default: hybrid when the index has both parts; rrf = "
        "Haystack's reciprocal rank fusion of the same two lists (on a Milvus index: Milvus's own RRF)",
    )
    se.add_argument("--model", help="query model; must be the one the index was built with")
    se.add_argument("--json", action="store_true", help='print one list per query of {"id", "score", "content"}')
    add_fusion_flag(se, "search")
    se.set_defaults(func=cmd_search)

    ev = sub.add_parser("eval", help="evaluate retrieval on a BEIR-format dataset (nDCG@10, recall, MRR, MAP)")
    ev.add_argument("dataset_dir", nargs="?", help="BEIR dir: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    how = ev.add_mutually_exclusive_group()
    how.add_argument("--mode", choices=MODES, default="dense", help="default: dense")
    how.add_argument("--pipeline", help="YAML pipeline with a `query` input and a `documents` output")
    ev.add_argument(
        "--store",
        default="faiss",
        choices=STORES,
        help="index store for --mode (default faiss; milvus: a Milvus Lite index, rrf = Milvus's own RRF)",
    )
    ev.add_argument("--split", default="test", help="qrels split (default test)")
    ev.add_argument("--model", default=DEFAULT_MODEL, help="embedding model for dense and hybrid modes")
    ev.add_argument("--index-dir", help="where to build/reuse the index (default ~/.cache/needle/eval/...)")
    ev.add_argument("--name", help="label of this run in tables and plots (default: the mode)")
    ev.add_argument("--json", help="write the result (schema needle.eval/1) to this file")
    ev.add_argument("--plot", help="write recall@k and per-query nDCG@10 plots to this PNG")
    ev.add_argument("--run-file", help="write the ranked results as a TREC run file")
    ev.add_argument("--compare", nargs="+", metavar="RESULT.json", help="earlier --json results to set beside")
    add_fusion_flag(ev, "run")
    ev.add_argument(
        "--latency-queries",
        type=int,
        metavar="N",
        help="after the batch pass, time at most N queries one at a time, evenly spaced (default 200; 0 skips it)",
    )
    ev.set_defaults(func=cmd_eval)

    sv = sub.add_parser(
        "serve", help="serve an index's search pipelines over HTTP with Hayhooks (query endpoints only)"
    )
    sv.add_argument("index_dir", help="directory made by `needle index`")
    sv.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    sv.add_argument("--port", type=port_number, default=1416, help="TCP port, 1-65535 (default 1416)")
    sv.add_argument(
        "--cors-origin",
        action="append",
        metavar="ORIGIN",
        help="allow browser pages from ORIGIN (repeatable); default: no CORS headers at all",
    )
    sv.add_argument(
        "--reranker",
        metavar="MODEL_DIR",
        help="also serve TEI's POST /rerank with this local cross-encoder directory (absolute path)",
    )
    sv.add_argument(
        "--reranker-max-batch",
        type=int,
        default=32,
        metavar="N",
        help="most texts per /rerank request (413 beyond; default 32, TEI's --max-client-batch-size)",
    )
    sv.add_argument(
        "--allow-deploy-search",
        action="store_true",
        help="list the MCP tool retriever_deploy_search, which fetches a URL the caller names (default: off)",
    )
    add_fusion_flag(sv, "server")
    sv.set_defaults(func=cmd_serve)

    mc = sub.add_parser(
        "mcp", help="UltraRAG's retriever MCP server on stdio (what an MCP host launches), index tools included"
    )
    mc.add_argument("--config", required=True, help=CONFIG_HELP)
    mc.set_defaults(func=cmd_mcp)
    add_tune_parser(sub)
    return p


def add_index_type_flags(ix: argparse.ArgumentParser) -> None:
    """`needle index --index-type flat|hnsw` and the HNSW settings (``needle.dense_index_type``)."""
    from needle.dense_index_type import FLAGS, INDEX_TYPES, RANGES, DenseIndexType

    default = DenseIndexType()
    ix.add_argument(
        "--index-type",
        default="flat",
        choices=INDEX_TYPES,
        help="FAISS index of the dense part: flat (default) is exact, its query time grows with the corpus; "
        f"hnsw is approximate (recall@10 >= 0.95 at the defaults M={default.hnsw_m}, efConstruction="
        f"{default.ef_construction}, efSearch={default.ef_search}), under a ms per query at a million vectors, "
        "but its build takes minutes there and about 20%% more memory for the vectors",
    )
    helps = {
        "hnsw_m": f"hnsw: graph neighbours per vector (default {default.hnsw_m}); more = better recall, more memory",
        "ef_construction": f"hnsw: candidates while building (default {default.ef_construction}); more = slower "
        "build, better graph",
        "ef_search": f"hnsw: candidates per query (default {default.ef_search}); more = better recall, slower queries",
    }
    for name, text in helps.items():
        low, high = RANGES[name]
        ix.add_argument(FLAGS[name], type=int_in(low, high), metavar="N", help=f"{text}; {low}-{high}")


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


# DocumentStoreError covers DirectoryLockedError (another writer) and damaged store files; OSError a full disk,
# a read-only place or a missing file.
USER_ERRORS = (NeedleError, ValueError, DocumentStoreError, OSError)


def user_error(error: BaseException) -> BaseException | None:
    """The user-facing error behind ERROR: pipelines wrap a component's error in PipelineRuntimeError."""
    from haystack.core.errors import PipelineRuntimeError

    while isinstance(error, PipelineRuntimeError) and error.__cause__ is not None:
        error = error.__cause__
    return error if isinstance(error, USER_ERRORS) else None


def run_cli(func: Callable[[argparse.Namespace], None], args: argparse.Namespace) -> int:
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `needle` console script."""
    from needle.milvus_index import quiet_lite_logging

    args = parser().parse_args(argv)
    quiet_lite_logging()
    return run_cli(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
