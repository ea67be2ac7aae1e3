"""UltraRAG's retriever `parameter.yaml` driving `needle index --config` and `needle search --config`.

The file is data: it is parsed with `yaml.safe_load`, every key is checked against UltraRAG HEAD's key list, and
each key is honoured or mapped to its meaning here; a key or value needle cannot honour is an error naming the
file, the key and what is allowed, never silently dropped. Values are typed as YAML 1.2 types them, in every block
whether chosen or not: a boolean is `true` or `false` (a quoted "false" is an error naming the file and the key
path, e.g. `backend_configs.sentence_transformers.trust_remote_code`, never a truthy string), a number is not
quoted, a block is a mapping or null; unknown keys are all named, whatever their type.

Paths in it (`corpus_path`, `embedding_path`, `index_path`, `save_path`, a Milvus Lite `uri`) are relative to the
file's own directory.

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
never written into the index; later processes need that variable set (``needle.ultrarag_keys``).

Web search, for the tools built on this module (`retriever_websearch`, `retriever_batch_websearch`):

- ``UltraRAGConfig.websearch``: a ``WebSearchChoice`` -- ``backend`` (`websearch_backend`: "tavily" | "exa" |
  "zhipuai") and ``options``: for each of the three providers, the init parameters of its component in
  ``components.websearch`` (``api_key`` as a ``Secret``, ``retries``, ``base_delay``, ``search_kwargs``; zhipuai
  also ``base_url``, ``search_engine``, ``search_intent``, ``search_recency_filter``, ``content_size``), mapped as
  ``needle.ultrarag_websearch`` describes (UltraRAG's `retries` counts tries, ours retries after the first).
- ``UltraRAGConfig.retrieve_thread_num`` (queries in flight at once) and ``UltraRAGConfig.retriever_url`` (the
  deploy server, http:// added when missing).
- ``web_search_component(config, backend=None, batch=False)``: a ready ``WebSearch`` (``WebBatchSearch`` with
  ``batch``) for BACKEND (default: the file's `websearch_backend`), with that provider's options, `top_k` and
  `retrieve_thread_num` from the file. Nothing is sent until it runs.
"""

import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from haystack.utils import Secret

from components.embedders.embedder_factory import (
    OPTIONAL_STRING,
    OPTIONS,
    EmbedderSpec,
    OptionType,
    check_block,
    check_options,
    embedder_spec,
    options_block,
)
from needle.backends import backend_name
from needle.index_dir import DEFAULT_MODEL, IndexManifest
from needle.index_generations import EMBEDDINGS, NeedleError
from needle.index_options import IndexOptions
from needle.indexing import StoreChoice, build_index
from needle.ultrarag_keys import take_literal
from needle.ultrarag_stores import IndexBackend, check_index_backend
from needle.ultrarag_websearch import WebSearchChoice, build_web_search, retriever_url, web_search_choice

if TYPE_CHECKING:
    from components.websearch.web_batch_search import WebBatchSearch
    from components.websearch.web_search import WebSearch

__all__ = ["UltraRAGConfig", "WebSearchChoice", "index_with_config", "load_config", "web_search_component"]

logger = logging.getLogger(__name__)
TOP_LEVEL = (
    "model_name_or_path", "corpus_path", "embedding_path", "collection_name", "backend", "backend_configs",
    "index_backend", "index_backend_configs", "websearch_backend", "websearch_backend_configs", "batch_size",
    "top_k", "gpu_ids", "query_instruction", "is_multimodal", "overwrite", "retrieve_thread_num", "retriever_url",
    "is_demo",
)  # fmt: skip
# Keys of a backend block read here, not by the factory, and their types.
BLOCK_EXTRA: dict[str, dict[str, OptionType]] = {
    "openai": {"api_key": OPTIONAL_STRING},
    "bm25": {"save_path": OPTIONAL_STRING},
}
KEY_VARIABLES = ["RETRIEVER_API_KEY", "OPENAI_API_KEY"]
MAX_THREADS = 64  # the web search components' limit of retrieve_thread_num


@dataclass(frozen=True)
class UltraRAGConfig:
    """What a parameter.yaml asks `needle` to build and search, checked and with paths resolved."""

    path: Path
    corpus: Path
    embedding_path: Path | None
    spec: EmbedderSpec
    index_dir: Path
    target: StoreChoice
    top_k: int
    overwrite: bool
    multimodal: bool  # is_multimodal: an image corpus (needle.multimodal_index embeds it with its CLIP model)
    options: IndexOptions  # repeated ids by position; the dense store's settings (needle.index_options)
    websearch: WebSearchChoice  # websearch_backend and websearch_backend_configs (needle.ultrarag_websearch)
    retrieve_thread_num: int  # web search: queries in flight at once
    retriever_url: str  # the deploy server of retriever_deploy_search

    @property
    def model(self) -> str | None:
        """The model name the manifest records (openai: `model_name`); None for BM25."""
        return self.spec.model if self.spec.dense else None


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
    "multimodal": (False, "is_multimodal"),
    "duplicate_ids": ("error", "corpus_path, read by UltraRAG's rule (repeated ids keyed by position),"),
}


def check_no_flags(given: dict[str, Any]) -> None:
    """Refuse `needle index` flags given beside --config (GIVEN: the parsed arguments), naming the file's key."""
    for flag, (default, key) in FILE_FLAGS.items():
        if given.get(flag, default) != default:
            shown = "CORPUS" if flag == "corpus" else f"--{flag.replace('_', '-')}"
            raise NeedleError(f"{shown} cannot be combined with --config: the file's {key} sets it")


def index_with_config(
    path: Path, out: Path | None = None, overrides: Mapping[str, Any] | None = None
) -> tuple[IndexManifest, Path]:
    """`needle index --config PATH [--out DIR]`: build the index the file describes (with OVERRIDES, as for
    `load_config`); returns its manifest and directory (DIR if given, else the backend's own index directory).

    The corpus vectors are reused from `embedding_path` when it holds this model's vectors of this corpus, and
    written there after the build.
    """
    config = load_config(path, overrides)
    dense, npy, out = config.spec.dense, config.embedding_path, out or config.index_dir
    manifest = build_index(
        config.corpus,
        out,
        model=config.model or DEFAULT_MODEL,
        overwrite=config.overwrite,
        dense=dense,
        bm25=not dense,
        lang="en" if dense else config.spec.bm25_lang(),
        target=config.target,
        seed=npy if npy is not None and npy.is_file() else None,
        embedder=config.spec.recorded() if dense and not config.multimodal else None,
        multimodal=config.multimodal,
        options=config.options,
    )
    if npy is not None:
        export_embeddings(out, manifest, npy)
    return manifest, out


def search_target(config: UltraRAGConfig) -> tuple[Path, str]:
    """(index directory, search mode) of `needle search --config`: the index of the file's backend, in its mode.

    :raises NeedleError: The index there was built for another backend than the file names (naming both), or
        there is no index yet.
    """
    manifest = IndexManifest.load(config.index_dir)
    wanted = config.spec.backend if config.spec.dense else "bm25"
    built = backend_name(manifest.embedder) if "dense" in manifest.modes else "bm25"
    if built != wanted:
        raise NeedleError(
            f"{config.path}: backend {wanted} names the index {config.index_dir}, but it was built with backend "
            f"{built}: run `needle index --config {config.path}` first"
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
        raise NeedleError(f"{config.path}: websearch_backend_configs.{name}: {error}") from None


def export_embeddings(index_dir: Path, manifest: IndexManifest, npy: Path) -> None:
    """Copy the generation's embedding file (and its fingerprint) to NPY, each replaced in one rename."""
    npy.parent.mkdir(parents=True, exist_ok=True)
    source = index_dir / manifest.generation / EMBEDDINGS
    for src, dst in ((source, npy), (Path(f"{source}.json"), Path(f"{npy}.json"))):
        if src.is_file():
            partial = dst.with_name(f".{dst.name}.partial")
            shutil.copyfile(src, partial)
            os.replace(partial, dst)


def load_config(path: Path, overrides: Mapping[str, Any] | None = None) -> UltraRAGConfig:
    """Read and check PATH; every problem is a NeedleError naming the file and key.

    OVERRIDES: top-level keys replacing the file's values (as UltraRAG's tools take them as parameters), checked
    and resolved exactly as the file's own (paths relative to the file).
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise NeedleError(f"cannot read the parameter file {path}: {' '.join(str(error).split())}") from None
    if not isinstance(data, dict):
        raise NeedleError(f"{path}: a parameter file holds a mapping of UltraRAG's keys, got {type(data).__name__}")
    data.update(overrides or {})
    try:
        return _checked(path, data)
    except ValueError as error:
        raise NeedleError(f"{path}: {error}") from None


def _checked(path: Path, data: dict[str, Any]) -> UltraRAGConfig:
    """The config of DATA (parsed from PATH); a ValueError names the key."""
    check_options("parameter file", data, TOP_LEVEL)
    base = path.resolve().parent
    multimodal, demo = _bool(data, "is_multimodal"), _bool(data, "is_demo")
    backend = "openai" if demo else _string(data, "backend", "sentence_transformers")
    index_backend = "milvus" if demo else _string(data, "index_backend", "faiss")
    if multimodal and (backend, index_backend) != ("sentence_transformers", "faiss"):
        raise ValueError(
            "is_multimodal: true needs backend sentence_transformers (a CLIP model) and index_backend faiss"
        )
    spec = _spec(data, backend)
    stores = options_block("index_backend_configs", data.get("index_backend_configs"))
    chosen = check_index_backend(index_backend, stores, _optional_string(data, "collection_name"), spec.dense)
    embedding = _path(base, data, "embedding_path")
    if embedding is not None and embedding.suffix != ".npy":
        raise ValueError(f"embedding_path must end with .npy, got {data.get('embedding_path')!r}")
    return UltraRAGConfig(
        path=path,
        corpus=_path(base, data, "corpus_path") or base / "corpus.jsonl",
        embedding_path=embedding if spec.dense else None,
        spec=spec,
        index_dir=_index_dir(base, data, backend, index_backend, chosen, embedding),
        target=chosen.target,
        top_k=_int(data, "top_k", 5),
        overwrite=_bool(data, "overwrite"),
        multimodal=multimodal,
        options=IndexOptions(duplicate_ids="position", store_settings=chosen.settings),
        websearch=web_search_choice(data.get("websearch_backend"), data.get("websearch_backend_configs")),
        retrieve_thread_num=_int(data, "retrieve_thread_num", 1, MAX_THREADS),
        retriever_url=retriever_url(data.get("retriever_url")),
    )


def _spec(data: dict[str, Any], backend: str) -> EmbedderSpec:
    """The embedding backend's checked spec (BM25's too: it holds the tokenizer settings)."""
    spec = embedder_spec(
        backend,
        _string(data, "model_name_or_path", ""),
        _backend_block(data, backend),
        query_instruction=_string(data, "query_instruction", ""),
        batch_size=_int(data, "batch_size", 32),
        gpu_ids=_gpu_ids(data.get("gpu_ids"), backend),
        api_key=_api_key(data, backend),
    )
    if spec.dense and not _string(data, "model_name_or_path", "") and backend != "openai":
        raise ValueError("model_name_or_path: the model is required for a dense backend")
    return spec


def _index_dir(
    base: Path, data: dict[str, Any], backend: str, index_backend: str, chosen: IndexBackend, embedding: Path | None
) -> Path:
    """The index directory: the chosen backend's own path (see the module docstring)."""
    if backend == "bm25":
        where = _bm25_dir(base, data)
    elif chosen.location is not None:
        where = _resolved(base, chosen.location)
    elif index_backend == "milvus" and chosen.target.uri is not None and embedding is not None:
        where = embedding.parent / f"milvus_{chosen.target.collection or 'needle'}"
    else:
        where = None
    if where is None:
        raise ValueError(f"{_location_key(backend, index_backend, chosen)}: needed to place the index (its directory)")
    return where


def _bm25_dir(base: Path, data: dict[str, Any]) -> Path | None:
    """The BM25 index directory, `save_path`; refused when it is a dense index's path of the same file."""
    where = _path(base, data["backend_configs"].get("bm25") or {}, "save_path", "backend_configs.bm25.save_path")
    stores = data.get("index_backend_configs") or {}
    dense = [(stores.get("faiss") or {}).get("index_path"), (stores.get("milvus") or {}).get("uri")]
    if where is not None and any(isinstance(p, str) and _resolved(base, p) == where for p in dense):
        raise ValueError(
            "backend_configs.bm25.save_path names a dense index's path too (faiss index_path or milvus uri): "
            "the BM25 index needs a directory of its own"
        )
    return where


def _backend_block(data: dict[str, Any], backend: str) -> dict[str, Any]:
    """Check every block of `backend_configs` (keys and their types); the chosen backend's block, factory keys
    only."""
    configs = options_block("backend_configs", data.get("backend_configs"))
    check_options("backend_configs", configs, tuple(OPTIONS))
    for name in configs:
        configs[name] = options_block(f"backend_configs.{name}", configs[name])
        check_block(name, configs[name], BLOCK_EXTRA.get(name))
    data["backend_configs"] = configs
    block = dict(configs.get(backend) or {})
    for extra in BLOCK_EXTRA.get(backend, ()):
        block.pop(extra, None)
    return block


def _api_key(data: dict[str, Any], backend: str) -> Secret | None:
    """The openai key's Secret; a literal key in the file is moved into RETRIEVER_API_KEY with a warning."""
    if backend != "openai":
        return None
    key = (data["backend_configs"].get("openai") or {}).get("api_key")
    if not take_literal("backend_configs.openai.api_key", key, "RETRIEVER_API_KEY"):
        return None
    return Secret.from_env_var(KEY_VARIABLES, strict=False)


def _gpu_ids(value: Any, backend: str) -> list[int] | None:
    """The seed's `gpu_ids` ("0,1", 1, [0, 1], "" or null) as a list of the GPUs this machine has; only
    sentence_transformers takes it."""
    if value in (None, ""):
        return None
    parts = value if isinstance(value, list) else str(value).split(",")
    try:
        ids = [int(str(part).strip()) for part in parts]
    except ValueError:
        raise ValueError(f'gpu_ids must list GPU numbers such as "0,1", got {value!r}') from None
    if backend == "infinity":
        logger.warning("gpu_ids: the infinity backend chooses its device by backend_configs.infinity.device")
        return None
    if backend != "sentence_transformers":  # bm25 and a remote (openai) backend run no model here: no device
        return None
    return _available_gpus(ids)


def _available_gpus(ids: list[int]) -> list[int] | None:
    """The GPUs of IDS that torch sees; one warning when some are missing, and None (no GPU named: the CPU when
    there is none) when all are, as UltraRAG's retriever falls back to the CPU."""
    import torch

    count = torch.cuda.device_count()
    present = [i for i in ids if 0 <= i < count]
    if len(present) == len(ids):
        return ids
    missing = ", ".join(str(i) for i in ids if i not in present)
    instead = f"GPU {', '.join(map(str, present))}" if present else "the CPU" if count == 0 else "the default device"
    logger.warning(f"gpu_ids: GPU {missing} is not available on this machine ({count} CUDA devices); using {instead}")
    return present or None


def _location_key(backend: str, index_backend: str, chosen: IndexBackend) -> str:
    """The key that places the index of this backend."""
    if backend == "bm25":
        return "backend_configs.bm25.save_path"
    if index_backend == "faiss":
        return "index_backend_configs.faiss.index_path"
    return "embedding_path" if chosen.target.uri is not None else "index_backend_configs.milvus.uri"


def _path(base: Path, data: Mapping[str, Any], key: str, shown: str | None = None) -> Path | None:
    """DATA's KEY (a path in the file; SHOWN names it in errors, default KEY) resolved against the file's
    directory; None when absent or empty."""
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{shown or key} must be a path (a string), got {value!r}")
    return _resolved(base, value)


def _resolved(base: Path, value: str | None) -> Path | None:
    """VALUE, a path of the file already checked to be a string, resolved against the file's directory; None when
    absent or empty."""
    return base / Path(value).expanduser() if value else None


def _string(data: dict[str, Any], key: str, default: str) -> str:
    """DATA's string KEY; DEFAULT when absent or null."""
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {value!r}")
    return value


def _optional_string(data: dict[str, Any], key: str) -> str | None:
    """DATA's KEY: a string, or None when absent or null."""
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} must be a string or null, got {value!r}")
    return value


def _int(data: dict[str, Any], key: str, default: int, high: int | None = None) -> int:
    """DATA's integer KEY (DEFAULT when absent), in [1, HIGH]; a bool or a quoted number is refused."""
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (high is not None and value > high):
        bound = f"an integer in [1, {high}]" if high is not None else "an integer >= 1"
        raise ValueError(f"{key} must be {bound}, got {value!r}")
    return value


def _bool(data: dict[str, Any], key: str) -> bool:
    """DATA's boolean KEY (false when absent): YAML's true or false only, so a quoted "false" is an error, not
    a truthy string."""
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value
