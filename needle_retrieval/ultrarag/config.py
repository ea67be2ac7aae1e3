"""UltraRAG's retriever `parameter.yaml` driving `needle index --config`, `needle search --config` and `needle mcp`.

The file is data: it is parsed as YAML data (``needle_retrieval.yaml_data``: `yaml.safe_load`, with a file
nested too deeply and an integer of more digits than Python reads refused in one line), every key is checked
against UltraRAG HEAD's key list, and each key is honoured or mapped to its meaning here. `load_config(None,
values)` checks the same keys given as arguments, with no file: what UltraRAG's client passes to `retriever_init`;
its errors name `retriever_init` where a file's name the file.

A key or value needle cannot honour for the chosen backends is an error naming the file, the key and what is
allowed. What a stock UltraRAG file carries that UltraRAG itself never reads is accepted with one warning that
names every such key, as UltraRAG accepts it: `path` (where UltraRAG's client finds the server code), and unknown
keys or blocks of the backends not chosen (`backend_configs`, `index_backend_configs` -- both for a BM25 backend,
which uses neither -- and `websearch_backend_configs`). `collection_name` is accepted with every backend: FAISS and
BM25 ignore it, as UltraRAG does; Milvus uses it as its collection. Values are typed as YAML 1.2 types them, in
every block whether chosen or not: a boolean is `true` or `false` (a quoted "false" is an error naming the file
and the key path, e.g. `backend_configs.sentence_transformers.trust_remote_code`, never a truthy string), a number
is not quoted, a block is a mapping or null; unknown keys are all named, whatever their type. `backend` and
`index_backend` are read in any case, as UltraRAG lower-cases them.

Paths in it (`corpus_path`, `embedding_path`, `index_path`, `save_path`, a Milvus Lite `uri`) are resolved as
UltraRAG resolves them: a relative path against the current working directory of the process that reads it
(UltraRAG's stock layout, servers/retriever/parameter.yaml with `corpus_path: data/corpus_example.jsonl`, means
the project root, where `ultrarag run` is started), `~` expanded, an absolute path as given. One rule for the CLI,
`needle mcp` and the MCP tools' arguments, so one file names the same files under both tools.

BM25 (`backend: bm25`): `lang` and `tokenizer` (auto, default, regex, jieba, character, char) give the terms
UltraRAG's bm25s tokenizer gives -- lower-cased, split by bm25s' pattern, per character or by jieba, the stopwords
of `lang` dropped, no stemming (``needle_retrieval.ultrarag.embedder_spec.bm25_tokenizer``); the index records that
tokenizer, so its searches cut queries the same way.

Where things go: the chosen backend's path *is* the index directory (what `needle search DIR` takes) -- bm25
`save_path`, faiss `index_path`, a Milvus Lite `uri`; for a Milvus server, `milvus_<collection_name>` beside
`embedding_path`. So the BM25, FAISS and Milvus indexes of one file never share a directory, and
`needle search --config` searches the one its `backend` and `index_backend` name. Inside it needle keeps its
generations (FAISS store, Lite database, BM25 files) so rebuilds stay atomic. The corpus vectors also go to
`embedding_path` and are reused from there while model and corpus are unchanged.

The corpus is read as UltraRAG reads it, by position: a repeated id (UltraRAG's own example corpus has them)
becomes `<id>#<line>`, with `meta["corpus_id"]` keeping the id the file gives
(``JSONLCorpusReader(duplicate_ids="position")``). `gpu_ids` naming a GPU this machine lacks gives one warning and
the embedders run without it (on the CPU where there is no GPU), as UltraRAG's retriever does.

Literal secrets -- `backend_configs.openai.api_key`, `index_backend_configs.milvus.token`, the web search
`api_key`s -- are taken with a warning: each reaches its component through this process's environment variable
(RETRIEVER_API_KEY, MILVUS_TOKEN, EXA_API_KEY / TAVILY_API_KEY / ZHIPUAI_API_KEY; one already set wins) and is
never written into the index; later processes need that variable set (``needle_retrieval.ultrarag.keys``).

Web search, for the tools built on this module (`retriever_websearch`, `retriever_batch_websearch`):

- ``UltraRAGConfig.websearch``: a ``WebSearchChoice`` -- ``backend`` (`websearch_backend`: "tavily" | "exa" |
  "zhipuai") and ``options``: for each of the three providers, the init parameters of its component in
  ``components.websearch`` (``api_key`` as a ``Secret``, ``retries``, ``base_delay``, ``search_kwargs``; zhipuai
  also ``base_url``, ``search_engine``, ``search_intent``, ``search_recency_filter``, ``content_size``), mapped as
  ``needle_retrieval.ultrarag.websearch`` describes (UltraRAG's `retries` counts tries, ours retries after the first).
- ``UltraRAGConfig.retrieve_thread_num`` (queries in flight at once) and ``UltraRAGConfig.retriever_url`` (the
  deploy server, http:// added when missing).
- ``web_search_component(config, backend=None, batch=False)``: a ready ``WebSearch`` (``WebBatchSearch`` with
  ``batch``) for BACKEND (default: the file's `websearch_backend`), with that provider's options, `top_k` and
  `retrieve_thread_num` from the file. Nothing is sent until it runs.
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.checks import MAX_TOP_K
from needle_retrieval.defaults import DEFAULT_MODEL, DEFAULT_TOP_K
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.dense_type import RANGES, DenseIndexType
from needle_retrieval.ultrarag.backends import BLOCK_EXTRA as BLOCK_EXTRA  # docs/hooks.py reads it here
from needle_retrieval.ultrarag.backends import embedding_spec
from needle_retrieval.ultrarag.embedder_spec import EmbedderSpec
from needle_retrieval.ultrarag.options import check_options, options_block
from needle_retrieval.ultrarag.stores import IndexBackend, check_index_backend
from needle_retrieval.ultrarag.values import bool_value, int_value, optional_string, path_value, resolved, string_value
from needle_retrieval.ultrarag.websearch import WebSearchChoice, build_web_search, retriever_url, web_search_choice
from needle_retrieval.yaml_data import load_yaml

if TYPE_CHECKING:  # Haystack (and torch with it) loads when a config is checked, not when this module is imported
    from components.websearch.web_batch_search import WebBatchSearch
    from components.websearch.web_search import WebSearch
    from needle_retrieval.index.build import StoreChoice
    from needle_retrieval.index.options import IndexOptions

__all__ = ["UltraRAGConfig", "WebSearchChoice", "load_config", "search_target", "web_search_component"]

logger = logging.getLogger(__name__)
TOP_LEVEL = (
    "model_name_or_path", "corpus_path", "embedding_path", "collection_name", "backend", "backend_configs",
    "index_backend", "index_backend_configs", "websearch_backend", "websearch_backend_configs", "batch_size",
    "top_k", "gpu_ids", "query_instruction", "is_multimodal", "overwrite", "retrieve_thread_num", "retriever_url",
    "is_demo", "path",
)  # fmt: skip
UNUSED_TOP_LEVEL = ("path",)  # UltraRAG's client reads it (where the server's code is); accepted, ignored here
ARGUMENTS = "retriever_init"  # what errors name when the values come as arguments, with no file
MAX_THREADS = 64  # the web search components' limit of retrieve_thread_num


@dataclass(frozen=True)
class UltraRAGConfig:
    """What a parameter.yaml (or `retriever_init`'s arguments) asks `needle` to build and search, checked and with
    paths resolved."""

    path: Path | None  # the parameter file; None: the values came as arguments (load_config(None, ...))
    corpus: Path
    embedding_path: Path | None
    spec: EmbedderSpec
    index_dir: Path
    target: "StoreChoice"
    top_k: int
    overwrite: bool
    multimodal: bool  # is_multimodal: an image corpus, embedded by SPEC's CLIP model (needle_retrieval.index.images)
    demo: bool  # is_demo: OpenAI embeddings into Milvus, retriever_index encoding the corpus itself (as UltraRAG's)
    options: "IndexOptions"  # repeated ids by position; the store's settings, BM25's tokenizer (index.options)
    index_type: DenseIndexType  # the FAISS index: index_backend_configs.faiss.index_type and its settings
    websearch: WebSearchChoice  # websearch_backend and websearch_backend_configs (needle_retrieval.ultrarag.websearch)
    retrieve_thread_num: int  # web search: queries in flight at once
    retriever_url: str  # the deploy server of retriever_deploy_search

    @property
    def model(self) -> str | None:
        """The model name the manifest records (openai: `model_name`); None for BM25."""
        return self.spec.model if self.spec.dense else None

    @property
    def source(self) -> str:
        """What errors about these values name: the file, or `retriever_init` when they came as arguments."""
        return ARGUMENTS if self.path is None else str(self.path)


# `needle index` flags that the file's keys set instead: flag -> (its default, the key that sets it).
FILE_FLAGS = {
    "corpus": (None, "corpus_path"),
    "model": (DEFAULT_MODEL, "model_name_or_path"),
    "overwrite": (False, "overwrite"),
    "bm25": (False, "backend: bm25"),
    "no_dense": (False, "backend: bm25"),
    "lang": ("en", "backend_configs.bm25.lang"),
    "store": ("faiss", "index_backend"),
    "uri": (None, "index_backend_configs.milvus.uri"),
    "collection": (None, "collection_name"),
    "partition_key": (None, "index_backend_configs.milvus.partition_key_field"),
    "multimodal": (False, "is_multimodal"),
    "duplicate_ids": ("error", "corpus_path, read by UltraRAG's rule (repeated ids keyed by position),"),
    "bm25_tokenizer": ("bm25s", "backend_configs.bm25.tokenizer"),
    "index_type": ("flat", "index_backend_configs.faiss.index_type"),
    **{name: (None, f"index_backend_configs.faiss.{name}") for name in RANGES},
}


def check_no_flags(given: dict[str, Any]) -> None:
    """Refuse `needle index` flags given beside --config (GIVEN: the parsed arguments), naming the file's key."""
    for flag, (default, key) in FILE_FLAGS.items():
        if given.get(flag, default) != default:
            shown = "CORPUS" if flag == "corpus" else f"--{flag.replace('_', '-')}"
            raise NeedleError(f"{shown} cannot be combined with --config: the file's {key} sets it")


def search_target(config: UltraRAGConfig) -> tuple[Path, str]:
    """(index directory, search mode) of `needle search --config`: the index of the file's backend, in its mode.

    :raises NeedleError: The index there was built for another backend than the file names (naming both), or
        there is no index yet.
    """
    from needle_retrieval.index.manifest import IndexManifest
    from needle_retrieval.pipelines.embedders import backend_name

    manifest = IndexManifest.load(config.index_dir)
    wanted = config.spec.backend if config.spec.dense else "bm25"
    built = backend_name(manifest.embedder) if "dense" in manifest.modes else "bm25"
    if built != wanted:
        rebuild = "retriever_index or bm25_index" if config.path is None else f"`needle index --config {config.path}`"
        raise NeedleError(
            f"{config.source}: backend {wanted} names the index {config.index_dir}, but it was built with backend "
            f"{built}: run {rebuild} first"
        )
    return config.index_dir, "dense" if config.spec.dense else "bm25"


def web_search_component(
    config: UltraRAGConfig, backend: str | None = None, batch: bool = False
) -> "WebSearch | WebBatchSearch":
    """A ready ``WebSearch`` (``WebBatchSearch`` with BATCH) for BACKEND (None: the file's `websearch_backend`),
    with that provider's options from `websearch_backend_configs`, and the file's `top_k` and
    `retrieve_thread_num`; not warmed up, nothing sent.

    :raises NeedleError: An unknown backend, or a value the provider's component refuses (naming the file).
    """
    try:
        return build_web_search(config.websearch, backend, batch, config.top_k, config.retrieve_thread_num)
    except ValueError as error:
        name = backend or config.websearch.backend
        raise NeedleError(f"{config.source}: websearch_backend_configs.{name}: {error}") from None


def load_config(path: Path | None, overrides: Mapping[str, Any] | None = None) -> UltraRAGConfig:
    """Read and check PATH; every problem is a NeedleError naming the file and key.

    OVERRIDES: top-level keys replacing the file's values (as UltraRAG's tools take them as parameters), checked
    and resolved exactly as the file's own (relative paths against the working directory). PATH None: no file,
    OVERRIDES are all the values (UltraRAG's `retriever_init` arguments), and errors name `retriever_init`.
    Keys UltraRAG would not read (see the module docstring) are named in one warning.
    """
    path = None if path is None else Path(path)
    data = {} if path is None else _read(path)
    data.update(overrides or {})
    source = ARGUMENTS if path is None else str(path)
    ignored: list[str] = []
    try:
        config = _checked(path, data, ignored)
    except ValueError as error:
        raise NeedleError(f"{source}: {error}") from None
    if ignored:
        names = ", ".join(ignored)
        logger.warning(f"{source}: ignored, as UltraRAG ignores them (not read with these backends): {names}")
    return config


def _read(path: Path) -> dict[str, Any]:
    """The mapping the parameter file PATH holds."""
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise NeedleError(f"cannot read the parameter file {path}: {' '.join(str(error).split())}") from None
    if not isinstance(data, dict):
        raise NeedleError(f"{path}: a parameter file holds a mapping of UltraRAG's keys, got {type(data).__name__}")
    return data


def _checked(path: Path | None, data: dict[str, Any], ignored: list[str]) -> UltraRAGConfig:
    """The config of DATA (parsed from PATH, or arguments when None); a ValueError names the key. The names of the
    keys UltraRAG would not read are added to IGNORED."""
    from needle_retrieval.index.options import IndexOptions

    check_options("parameter file" if path is not None else "arguments", data, TOP_LEVEL)
    ignored += [key for key in UNUSED_TOP_LEVEL if key in data]
    base = Path.cwd()
    multimodal, demo = bool_value(data, "is_multimodal"), bool_value(data, "is_demo")
    backend = "openai" if demo else string_value(data, "backend", "sentence_transformers").lower()
    index_backend = "milvus" if demo else string_value(data, "index_backend", "faiss").lower()
    if multimodal and (backend, index_backend) != ("sentence_transformers", "faiss"):
        raise ValueError(
            "is_multimodal: true needs backend sentence_transformers (a CLIP model) and index_backend faiss"
        )
    spec = embedding_spec(data, backend, ignored)
    stores = options_block("index_backend_configs", data.get("index_backend_configs"))
    chosen = check_index_backend(index_backend, stores, optional_string(data, "collection_name"), spec.dense, ignored)
    embedding = path_value(base, data, "embedding_path")
    if embedding is not None and embedding.suffix != ".npy":
        raise ValueError(f"embedding_path must end with .npy, got {data.get('embedding_path')!r}")
    return UltraRAGConfig(
        path=path,
        corpus=path_value(base, data, "corpus_path") or base / "corpus.jsonl",
        embedding_path=embedding if spec.dense else None,
        spec=spec,
        index_dir=_index_dir(base, data, backend, index_backend, chosen, embedding),
        target=chosen.target,
        top_k=int_value(data, "top_k", DEFAULT_TOP_K, MAX_TOP_K),
        overwrite=bool_value(data, "overwrite"),
        multimodal=multimodal,
        demo=demo,
        options=IndexOptions(
            duplicate_ids="position",
            store_settings=chosen.settings,
            bm25_tokenizer=None if spec.dense else spec.bm25_tokenizer(),
        ),
        index_type=chosen.index_type,
        websearch=web_search_choice(data.get("websearch_backend"), data.get("websearch_backend_configs"), ignored),
        retrieve_thread_num=int_value(data, "retrieve_thread_num", 1, MAX_THREADS),
        retriever_url=retriever_url(data.get("retriever_url")),
    )


def _index_dir(
    base: Path, data: dict[str, Any], backend: str, index_backend: str, chosen: IndexBackend, embedding: Path | None
) -> Path:
    """The index directory: the chosen backend's own path (see the module docstring)."""
    if backend == "bm25":
        where = _bm25_dir(base, data)
    elif chosen.location is not None:
        where = resolved(base, chosen.location)
    elif index_backend == "milvus" and chosen.target.uri is not None and embedding is not None:
        where = embedding.parent / f"milvus_{chosen.target.collection or 'needle'}"
    else:
        where = None
    if where is None:
        raise ValueError(f"{_location_key(backend, index_backend, chosen)}: needed to place the index (its directory)")
    return where


def _bm25_dir(base: Path, data: dict[str, Any]) -> Path | None:
    """The BM25 index directory, `save_path`; refused when it is a dense index's path of the same file."""
    where = path_value(base, data["backend_configs"].get("bm25") or {}, "save_path", "backend_configs.bm25.save_path")
    stores = data.get("index_backend_configs") or {}
    dense = [(stores.get("faiss") or {}).get("index_path"), (stores.get("milvus") or {}).get("uri")]
    if where is not None and any(isinstance(p, str) and resolved(base, p) == where for p in dense):
        raise ValueError(
            "backend_configs.bm25.save_path names a dense index's path too (faiss index_path or milvus uri): "
            "the BM25 index needs a directory of its own"
        )
    return where


def _location_key(backend: str, index_backend: str, chosen: IndexBackend) -> str:
    """The key that places the index of this backend."""
    if backend == "bm25":
        return "backend_configs.bm25.save_path"
    if index_backend == "faiss":
        return "index_backend_configs.faiss.index_path"
    return "embedding_path" if chosen.target.uri is not None else "index_backend_configs.milvus.uri"
