"""`needle index`'s flags: the corpus, the parts to build (dense, BM25, learned sparse), where (FAISS or Milvus), how
(model, index type, language, tokenizer, chunks, batches, threads) and for whom (tenants), with no heavy import.

Kept apart from ``needle_retrieval.cli.parser`` (which holds the other sub-commands) because `index` has the most
flags; it imports only argparse-light modules, so `needle index --help` answers at once.
"""

from typing import Any

from components.stores.bm25.languages import LANGUAGES  # the codes only: imports nothing heavy
from needle_retrieval.cli.index_type_flags import add_index_type_flags
from needle_retrieval.cli.options import (
    CONFIG_HELP,
    MAX_EMBED_BATCH,
    add_threads_flag,
    chunk_size_number,
    embed_batch_number,
    tenant_field_flag,
)
from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE, DEFAULT_MODEL, STORES


def add_index_parser(sub: Any) -> None:
    """`needle index CORPUS --out DIR [flags]` (or `--config parameter.yaml`)."""
    ix = sub.add_parser("index", help="embed a corpus JSONL and index it (FAISS or Milvus, optionally BM25)")
    ix.add_argument(
        "corpus", nargs="?", help="corpus JSONL (UltraRAG `contents` lines or BEIR `_id`/`title`/`text` lines)"
    )
    ix.add_argument("--out", help="index directory to create, or an index to rebuild (atomically)")
    ix.add_argument("--config", help=CONFIG_HELP + "; --out defaults to the directory of its index path")
    ix.add_argument("--model", default=DEFAULT_MODEL, help=f"sentence-transformers model (default {DEFAULT_MODEL})")
    ix.add_argument("--overwrite", action="store_true", help="re-encode even if the index's embeddings match")
    ix.add_argument(
        "--embeddings",
        metavar="FILE.npy",
        help="the corpus's vectors computed elsewhere (row i = corpus line i, float32 or float16, e.g. UltraRAG's "
        "retriever_embed output): checked against the corpus and --model, copied into the index and indexed "
        "without loading the model; searches encode queries with --model",
    )
    ix.add_argument(
        "--bm25",
        action="store_true",
        help="also build a BM25 index (with --store milvus: Milvus's BM25 function on the collection, so BM25 "
        "and hybrid search run inside Milvus)",
    )
    ix.add_argument(
        "--sparse",
        metavar="MODEL",
        help="also build a learned sparse (SPLADE-style) part with this sentence-transformers SparseEncoder, e.g. "
        "naver/splade-cocondenser-ensembledistil or prithivida/Splade_PP_en_v1 (FAISS store only); searched with "
        "--mode sparse, and fused with dense in hybrid and rrf mode in place of BM25",
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
        choices=LANGUAGES,
        metavar="LANG",
        help="BM25 language: en (default), zh (jieba), character (CJK characters), or the ISO 639-1 code of a "
        f"language PyStemmer stems ({', '.join(LANGUAGES[3:])}): stemmed, with bm25s' stop list where it has one; "
        "the index records it and every search uses it. milvus: en, zh and the languages of Milvus's stemmer",
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
        "--partition-key",
        metavar="FIELD",
        help='milvus: tenants: every corpus line\'s FIELD (a string, e.g. "tenant": meta.tenant) is stored as the '
        "collection's Milvus partition key, so a filter on meta.FIELD searches only that tenant's partition; the "
        "index records it",
    )
    ix.add_argument(
        "--tenant-field",
        type=tenant_field_flag,
        metavar="meta.KEY",
        help="faiss: the meta field that tells the corpus's tenants apart (e.g. meta.tenant, from each line's "
        '"tenant"); the index records it, `needle search --tenant T` then searches T\'s documents only, as fast as '
        "an index of T's documents alone (see the tenants guide)",
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
    ix.add_argument(
        "--batch-size",
        type=embed_batch_number,
        metavar="N",
        help=f"texts (images) per encode batch of the document embedder, 1-{MAX_EMBED_BATCH} (default: the "
        "embedder's own, 32, or batch_size of --config); the embeddings are the same for any N (up to float "
        "rounding), and an index's embeddings are reused whatever N built them",
    )
    add_threads_flag(ix, "encoding (torch) and the FAISS build")
