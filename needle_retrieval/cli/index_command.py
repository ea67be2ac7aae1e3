"""`needle index`: build an index directory from a corpus JSONL, or from UltraRAG's retriever file with --config.

Kept apart from ``needle_retrieval.cli.commands`` (the other sub-commands, the error handling and ``main``) so that
each module stays short: `index` has the most flag checks of any command, all made, with the corpus path's, before the
index modules (Haystack, torch) are imported, so that a wrong flag answers at once.
"""

import argparse
import time
from pathlib import Path

from needle_retrieval.cli.options import limit_threads
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import check_corpus

__all__ = ["cmd_index", "index_with_config"]


def cmd_index(args: argparse.Namespace) -> None:
    """Build (or rebuild) an index directory from a corpus JSONL; the flags and the corpus path are checked before
    the index modules (Haystack, torch) are imported."""
    if args.config is not None:
        if args.embeddings is not None:
            raise NeedleError("--embeddings cannot be combined with --config: the file's embedding_path names them")
        index_with_config(args)
        return
    if args.corpus is None or args.out is None:
        raise NeedleError("needle index needs CORPUS and --out DIR (or --config parameter.yaml)")
    if args.bm25_tokenizer != "bm25s" and (args.store != "faiss" or not args.bm25):
        raise NeedleError("--bm25-tokenizer needs --bm25 and --store faiss (Milvus's BM25 uses its own analyzers)")
    if args.store == "faiss" and (args.uri is not None or args.collection is not None):
        raise NeedleError("--uri and --collection need --store milvus (FAISS keeps its index inside --out)")
    from needle_retrieval.index.milvus_place import tenant_settings

    store_settings = tenant_settings(args.store, args.partition_key)
    if args.no_dense and args.batch_size is not None and not args.sparse:
        raise NeedleError("--batch-size sets the document embedder's batch: --no-dense embeds nothing")
    check_corpus(Path(args.corpus))
    limit_threads(args.threads)
    from needle_retrieval.cli.index_type_flags import index_type_of
    from needle_retrieval.index.build import StoreChoice, build_index
    from needle_retrieval.index.options import IndexOptions

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
        sparse=args.sparse,
        chunk_size=args.chunk_size,
        index_type=index_type_of(args),
        options=IndexOptions(
            duplicate_ids=args.duplicate_ids,
            bm25_tokenizer=None if args.bm25_tokenizer == "bm25s" else args.bm25_tokenizer,
            batch_size=args.batch_size,
            tenant_field=args.tenant_field,
            store_settings=store_settings,
        ),
        embeddings=None if args.embeddings is None else Path(args.embeddings),
    )
    took = time.perf_counter() - start
    where = ""
    if manifest.store == "milvus":
        from needle_retrieval.index.milvus_place import MilvusPlace

        place = MilvusPlace(str(manifest.uri), str(manifest.collection))
        where = f" (Milvus collection {place.collection} at {place.uri_under(Path(args.out) / manifest.generation)})"
    print(f"indexed {manifest.documents} documents ({', '.join(manifest.modes)}) into {args.out}{where} in {took:.1f}s")


def index_with_config(args: argparse.Namespace) -> None:
    """`needle index --config parameter.yaml [--out DIR]`: UltraRAG's retriever file drives the build; --batch-size
    replaces the file's ``batch_size``."""
    from needle_retrieval.ultrarag import build as ultrarag_build
    from needle_retrieval.ultrarag import config as ultrarag_config

    ultrarag_config.check_no_flags(vars(args))
    limit_threads(args.threads)
    overrides = None if args.batch_size is None else {"batch_size": args.batch_size}
    start = time.perf_counter()
    out_dir = Path(args.out) if args.out else None
    manifest, out = ultrarag_build.index_with_config(Path(args.config), out_dir, overrides)
    took = time.perf_counter() - start
    print(f"indexed {manifest.documents} documents ({', '.join(manifest.modes)}) into {out} in {took:.1f}s")
