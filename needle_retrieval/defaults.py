"""needle's defaults and fixed names, each defined once, importable without Haystack, torch or numpy.

The parser (``needle_retrieval.cli.parser``) states them in ``--help``; the modules that build, search and serve indexes
take them from here, so that a default changes in one place.
"""

DISTRIBUTION = "needle-retrieval"  # pyproject.toml's [project] name
MODES = ("dense", "bm25", "hybrid", "rrf", "sparse")  # rrf: Haystack's DocumentJoiner fusion (Milvus's own RRF)
# `needle eval` builds its own index of a data set and has no learned sparse model to build one with
EVAL_MODES = ("dense", "bm25", "hybrid", "rrf")
STORES = ("faiss", "milvus")  # faiss: FAISS (+ bm25s with --bm25); milvus: one Milvus collection for every part
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# What an UltraRAG request's query_instruction does (POST /search and the MCP tools declare it alike)
INSTRUCTION_HELP = 'put in front of each query for the dense part only, replacing the index\'s own ("" keeps it)'
DEFAULT_TOP_K = 5  # hits per query when a command, a request or a pipeline file names none
QUERY_BATCH = 64  # queries per pipeline run of `needle search` (--batch-size): one run's overhead shared by many
RUN_DEPTH = 100  # hits per query of a TREC run (search --queries, eval, tune) unless --top-k says otherwise
DEFAULT_CHUNK_SIZE = 10_000
# An index directory's live-generation pointer: components.stores.crash_safe_generations.POINTER, named here too
# so a path error needs no store code (a test checks that the two agree).
INDEX_POINTER = "CURRENT"
HAYHOOKS_DIR = "hayhooks"  # DIR/gen-NNNNNN/hayhooks: the --pipelines-dir of `hayhooks run`
