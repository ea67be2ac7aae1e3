"""The `needle` argument parser: every sub-command's flags, help texts and argument checks, with no heavy import.

Building it imports only ``argparse``, ``needle_retrieval.cli.options``, ``needle_retrieval.cli.index_parser``
(`needle index`'s flags) and ``needle_retrieval.index.dense_type`` (no Haystack, no torch), so `needle --help`,
`needle SUB --help`, `--version` and argument errors answer at once; ``needle_retrieval.cli`` runs the parsed
sub-command (``args.command``), importing what it needs then.
"""

import argparse
from typing import Any, NoReturn

from components.checks import MAX_QUERIES, MAX_TOP_K
from needle_retrieval.cli.index_parser import add_index_parser
from needle_retrieval.cli.index_type_flags import add_search_time_flags
from needle_retrieval.cli.options import (
    CONFIG_HELP,
    EXIT_USAGE,
    add_threads_flag,
    fusion_option,
    instruction_text,
    needle_version,
    port_number,
    query_batch_number,
    score_number,
    tenant_flag,
    top_k_number,
)
from needle_retrieval.defaults import (
    DEFAULT_MODEL,
    DEFAULT_TOP_K,
    EVAL_MODES,
    MODES,
    QUERY_BATCH,
    RUN_DEPTH,
    STORES,
)


def add_fusion_flag(command: argparse.ArgumentParser, what: str) -> None:
    """``--fusion FILE|default`` (``needle_retrieval.pipelines.fusion.fusion_option``): the fusion parameters of this
    run only."""
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
    p.add_argument("--version", action="version", version=f"needle {needle_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    add_index_parser(sub)

    se = sub.add_parser("search", help="search an index directory")
    se.add_argument("index_dir", help="directory made by `needle index`")
    se.add_argument("queries", nargs="*", metavar="QUERY")
    se.add_argument(
        "--top-k",
        type=top_k_number,
        help=f"hits per query, 1-{MAX_TOP_K} (default {DEFAULT_TOP_K}, or top_k of --config; "
        f"{RUN_DEPTH} with --queries)",
    )
    se.add_argument(
        "--min-score",
        type=score_number,
        metavar="X",
        help="drop hits scoring below X (fewer than --top-k may come back): the mode's final score, fused in hybrid "
        "and rrf mode; BM25 scores are unbounded, dense ones cosine or inner product (see the score-threshold "
        "guide); default: keep every hit",
    )
    se.add_argument(
        "--tenant",
        type=tenant_flag,
        metavar="T",
        help="search only the documents of tenant T: those whose recorded tenant field (`needle index --tenant-field`, "
        "or a Milvus index's --partition-key) holds T; every mode, fused ones on both sides",
    )
    se.add_argument("--config", help=CONFIG_HELP + "; it names the index, so give only QUERY...")
    se.add_argument(
        "--mode",
        choices=MODES,
        help="default: hybrid when the index has both parts; rrf = "
        "Haystack's reciprocal rank fusion of the same two lists (on a Milvus index: Milvus's own RRF); sparse = the "
        "learned sparse part (`needle index --sparse`), which is also the side fused with dense when the index has one",
    )
    se.add_argument("--model", help="query model; must be the one the index was built with")
    se.add_argument(
        "--query-instruction",
        type=instruction_text,
        metavar="TEXT",
        help="put TEXT in front of every query for the query embedder, in place of the instruction the index "
        'recorded (never on top of it); "" for none; default: the index\'s own, or query_instruction of --config '
        "when it is not empty; BM25 ignores it",
    )
    se.add_argument("--json", action="store_true", help='print one list per query of {"id", "score", "content"}')
    add_fusion_flag(se, "search")
    add_run_flags(se)
    se.add_argument(
        "--batch-size",
        type=query_batch_number,
        metavar="N",
        help=f"queries per pipeline run when there are many (QUERY... or --queries), 1-{MAX_QUERIES} "
        f"(default {QUERY_BATCH}); it changes speed and memory, not the hits",
    )
    add_threads_flag(se, "query encoding (torch), FAISS search and BM25 scoring")
    add_trust_flags(se)
    add_search_time_flags(se)

    ev = sub.add_parser("eval", help="evaluate retrieval on a BEIR-format dataset (nDCG@10, recall, MRR, MAP)")
    ev.add_argument("dataset_dir", nargs="?", help="BEIR dir: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    how = ev.add_mutually_exclusive_group()
    how.add_argument("--mode", choices=EVAL_MODES, default="dense", help="default: dense")
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

    sv = sub.add_parser(
        "serve",
        help="serve an index's search pipelines over HTTP with Hayhooks (query endpoints only)",
        description="Serve an index's search pipelines over HTTP (query endpoints only). A request line and headers "
        "may take at most 64 KiB (431 beyond); /mcp takes POST only (GET: 405); requests of up to 8 queries run in a "
        "lane of their own, so a heavy /search batch cannot keep them waiting.",
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
    sv.add_argument(
        "--ultrarag-mode",
        choices=MODES,
        metavar="MODE",
        help="the mode UltraRAG's POST /search and MCP retriever_search answer in: dense, bm25, hybrid, rrf or sparse, "
        "one the index serves (hybrid and rrf fuse dense with its learned sparse part when it has one, else BM25; "
        "default: its dense part, as UltraRAG's retriever_search is dense; else BM25, or the sparse part alone)",
    )
    sv.add_argument(
        "--tenant",
        type=tenant_flag,
        metavar="T",
        help="serve tenant T only: every route and MCP tool searches only the documents whose recorded tenant field "
        "(`needle index --tenant-field`, or a Milvus index's --partition-key) holds T, and a request naming another "
        'tenant is refused (403); default: every document, or the tenant a request\'s "tenant" names',
    )
    add_fusion_flag(sv, "server")
    add_trust_flags(sv)

    mc = sub.add_parser(
        "mcp", help="UltraRAG's retriever MCP server on stdio (what an MCP host launches), index tools included"
    )
    mc.add_argument(
        "--config",
        help=CONFIG_HELP + "; without it the host's retriever_init call gives the values, as UltraRAG's client does",
    )
    mc.add_argument(
        "--drop-in",
        action="store_true",
        help="print the file that puts needle in UltraRAG's retriever's place (servers/retriever/src/retriever.py) "
        "and exit",
    )
    add_tune_parser(sub)
    add_pipelines_parser(sub)
    return p


def add_pipelines_parser(sub: Any) -> None:
    """`needle pipelines list [--json]` and `needle pipelines show NAME`: the YAML pipelines the package ships."""
    pl = sub.add_parser("pipelines", help="list the YAML pipelines this package ships, or print one to edit and load")
    what = pl.add_subparsers(dest="pipelines_command", required=True)
    ls = what.add_parser("list", help="each shipped pipeline's name and what it does")
    ls.add_argument("--json", action="store_true", help='print a JSON list of {"name", "summary", "inputs", "outputs"}')
    show = what.add_parser("show", help="print a shipped pipeline's YAML (redirect it to a file to edit it)")
    show.add_argument("name", help="a name `needle pipelines list` prints, e.g. bm25_search")


def add_trust_flags(command: argparse.ArgumentParser) -> None:
    """What an index may use beyond data (``needle_retrieval.index.trust``): each must be named by the user, the index
    only has to match. Repeatable; the ``NEEDLE_*`` variables add to them."""
    command.add_argument(
        "--trust-remote-code",
        action="append",
        default=[],
        metavar="MODEL",
        help="let MODEL (as the index names it) run its own Python code, for an index built with trust_remote_code; "
        "also NEEDLE_TRUST_REMOTE_CODE=MODEL,...",
    )
    command.add_argument(
        "--allow-server",
        action="append",
        default=[],
        metavar="URL",
        help="let the search send queries to URL: the embedding server (base_url, Infinity url; "
        "https://api.openai.com/v1 for OpenAI) or Milvus server the index was built with; also "
        "NEEDLE_ALLOW_SERVERS=URL,...",
    )
    command.add_argument(
        "--allow-key-env",
        action="append",
        default=[],
        metavar="VAR",
        help="let the search read its API key from the environment variable VAR, when the index was built with a "
        "key variable other than the usual OPENAI_API_KEY, RETRIEVER_API_KEY, INFINITY_API_KEY, MILVUS_TOKEN; "
        "also NEEDLE_ALLOW_KEY_ENV=VAR,...",
    )


def add_run_flags(se: argparse.ArgumentParser) -> None:
    """`needle search --queries FILE [--output RUN] [--run-tag T]`: a batch run (``needle_retrieval.search.runs``)."""
    se.add_argument(
        "--queries",
        dest="queries_file",
        metavar="FILE",
        help="search every query of FILE instead of QUERY...: a BEIR queries.jsonl ({_id, text} lines), a "
        "qid<TAB>text TSV or TREC topics (<top> <num> <title>), as Pyserini's --topics; prints a TREC run "
        "(qid Q0 docid rank score tag, the retrieval scores) or, with --json, one JSON line a query "
        '({"qid", "hits": [{"id", "score", "rank"}]}); --top-k defaults to 100 here',
    )
    se.add_argument(
        "--output",
        metavar="RUN",
        help="with --queries: write the run to RUN (atomically) instead of stdout; RUN.jsonl: JSON lines, "
        "any other name (run.trec, run.txt): a TREC run",
    )
    se.add_argument(
        "--run-tag", metavar="TAG", help="with --queries: the TREC run's last column (default: the mode, e.g. bm25)"
    )


def add_tune_parser(sub: Any) -> None:
    """The `tune` sub-command of the `needle` parser."""
    tu = sub.add_parser("tune", help="fit the hybrid fusion (mix curve, RRF k) on a BEIR training split")
    tu.add_argument("dataset_dir", help="BEIR dir: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    tu.add_argument("--split", default="train", help="qrels split to fit on (default train)")
    tu.add_argument("--model", default=DEFAULT_MODEL, help="embedding model of the dense side")
    tu.add_argument("--index-dir", help="index of the corpus to build or reuse and tune (default: `needle eval`'s)")
    tu.add_argument("--json", help="write the fitted values and the scores to this file (schema needle.tune/1)")
    what = tu.add_mutually_exclusive_group()
    what.add_argument(
        "--out",
        metavar="FILE",
        help="write the fitted fusion to FILE only (schema needle.fusion/1), leaving the index's as it is; "
        "apply it to a run with `--fusion FILE` on search, eval or serve",
    )
    what.add_argument(
        "--reset",
        action="store_true",
        help="undo a tune: remove the index's fusion.json and publish a generation with the default fusion",
    )
