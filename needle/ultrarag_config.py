"""UltraRAG's retriever `parameter.yaml` driving `needle index --config` and `needle search --config`.

The file is data: it is parsed with `yaml.safe_load`, every key is checked against the seed's key list, and a key
or value needle cannot honour is an error naming the file, the key and what is allowed, never silently dropped.
Paths in it (`corpus_path`, `embedding_path`, `index_path`, `save_path`, a Milvus Lite `uri`) are relative to
the file's own directory.

Where things go: the index directory (what `needle search DIR` takes) is the directory that holds the chosen
backend's index path -- faiss `index_path`, milvus Lite `uri`, bm25 `save_path`; for a Milvus server the one
holding `embedding_path` -- so the seed's example builds `index/` beside the file. Inside it needle keeps its
generations (FAISS store, Lite database, BM25 files) so rebuilds stay atomic; a warning says so. The corpus
vectors also go to `embedding_path` and are reused from there while model and corpus are unchanged.

A literal `backend_configs.openai.api_key` is taken with a warning: it reaches the embedders through this
process's `RETRIEVER_API_KEY` (the seed's own fallback variable; one already set wins) and is never written
into the index; later searches need that variable set.
"""

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from haystack.utils import Secret

from components.embedders.embedder_factory import OPTIONS, EmbedderSpec, check_options, embedder_spec
from needle.index_dir import DEFAULT_MODEL, IndexManifest
from needle.index_generations import EMBEDDINGS, NeedleError
from needle.indexing import StoreChoice, build_index
from needle.ultrarag_stores import check_index_backend

logger = logging.getLogger(__name__)
TOP_LEVEL = (
    "model_name_or_path", "corpus_path", "embedding_path", "collection_name", "backend", "backend_configs",
    "index_backend", "index_backend_configs", "batch_size", "top_k", "gpu_ids", "query_instruction",
    "is_multimodal", "overwrite", "is_demo",
    "retrieve_thread_num", "retriever_url",  # the seed's web search and deploy tools: no part of index or search
)  # fmt: skip
BLOCK_EXTRA = {"openai": ("api_key",), "bm25": ("save_path",)}  # read here, not by the factory
KEY_VARIABLES = ["RETRIEVER_API_KEY", "OPENAI_API_KEY"]


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
}


def check_no_flags(given: dict[str, Any]) -> None:
    """Refuse `needle index` flags given beside --config (GIVEN: the parsed arguments), naming the file's key."""
    for flag, (default, key) in FILE_FLAGS.items():
        if given.get(flag, default) != default:
            shown = "CORPUS" if flag == "corpus" else f"--{flag.replace('_', '-')}"
            raise NeedleError(f"{shown} cannot be combined with --config: the file's {key} sets it")


def index_with_config(path: Path, out: Path | None = None) -> tuple[IndexManifest, Path]:
    """`needle index --config PATH [--out DIR]`: build the index the file describes; returns its manifest and
    directory (DIR if given, else the directory of the file's index path).

    The corpus vectors are reused from `embedding_path` when it holds this model's vectors of this corpus, and
    written there after the build.
    """
    config = load_config(path)
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
    )
    if npy is not None:
        export_embeddings(out, manifest, npy)
    return manifest, out


def export_embeddings(index_dir: Path, manifest: IndexManifest, npy: Path) -> None:
    """Copy the generation's embedding file (and its fingerprint) to NPY, each replaced in one rename."""
    npy.parent.mkdir(parents=True, exist_ok=True)
    source = index_dir / manifest.generation / EMBEDDINGS
    for src, dst in ((source, npy), (Path(f"{source}.json"), Path(f"{npy}.json"))):
        if src.is_file():
            partial = dst.with_name(f".{dst.name}.partial")
            shutil.copyfile(src, partial)
            os.replace(partial, dst)


def load_config(path: Path) -> UltraRAGConfig:
    """Read and check PATH; every problem is a NeedleError naming the file and key."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise NeedleError(f"cannot read the parameter file {path}: {' '.join(str(error).split())}") from None
    if not isinstance(data, dict):
        raise NeedleError(f"{path}: a parameter file holds a mapping of UltraRAG's keys, got {type(data).__name__}")
    try:
        return _checked(path, data)
    except ValueError as error:
        raise NeedleError(f"{path}: {error}") from None


def _checked(path: Path, data: dict[str, Any]) -> UltraRAGConfig:
    """The config of DATA (parsed from PATH); a ValueError names the key."""
    check_options("parameter file", data, TOP_LEVEL)
    base = path.resolve().parent
    multimodal = _bool(data, "is_multimodal")
    backend = "openai" if data.get("is_demo") else _string(data, "backend", "sentence_transformers")
    index_backend = "milvus" if data.get("is_demo") else _string(data, "index_backend", "faiss")
    if multimodal and (backend, index_backend) != ("sentence_transformers", "faiss"):
        raise ValueError(
            "is_multimodal: true needs backend sentence_transformers (a CLIP model) and index_backend faiss"
        )
    block = _backend_block(data, backend)
    spec = embedder_spec(
        backend,
        _string(data, "model_name_or_path", ""),
        block,
        query_instruction=_string(data, "query_instruction", ""),
        batch_size=_int(data, "batch_size", 32),
        gpu_ids=_gpu_ids(data.get("gpu_ids"), backend),
        api_key=_api_key(data, backend),
    )
    if spec.dense and not _string(data, "model_name_or_path", "") and backend != "openai":
        raise ValueError("model_name_or_path: the model is required for a dense backend")
    save_path = (data["backend_configs"].get("bm25") or {}).get("save_path") if backend == "bm25" else None
    stores = data.get("index_backend_configs") or {}
    target, index_path = check_index_backend(index_backend, stores, data.get("collection_name"), spec.dense)
    embedding = _path(base, data.get("embedding_path"))
    where = _path(base, save_path) if backend == "bm25" else _path(base, index_path) or embedding
    if where is None:
        raise ValueError(f"{_location_key(backend, index_backend)}: needed to place the index (its directory)")
    if embedding is not None and embedding.suffix != ".npy":
        raise ValueError(f"embedding_path must end with .npy, got {data.get('embedding_path')!r}")
    return UltraRAGConfig(
        path=path,
        corpus=_path(base, data.get("corpus_path")) or base / "corpus.jsonl",
        embedding_path=embedding if spec.dense else None,
        spec=spec,
        index_dir=where.parent,
        target=target,
        top_k=_int(data, "top_k", 5),
        overwrite=_bool(data, "overwrite"),
        multimodal=multimodal,
    )


def _backend_block(data: dict[str, Any], backend: str) -> dict[str, Any]:
    """Check every block of `backend_configs` for unknown keys; the chosen backend's block, factory keys only."""
    configs = data.get("backend_configs") or {}
    check_options("backend_configs", configs, tuple(OPTIONS))
    for name, block in configs.items():
        check_options(f"backend_configs.{name}", block or {}, OPTIONS[name] + BLOCK_EXTRA.get(name, ()))
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
    if key in (None, ""):
        return None
    if not isinstance(key, str):
        raise ValueError(f"backend_configs.openai.api_key must be a string or null, got {type(key).__name__}")
    if os.environ.get("RETRIEVER_API_KEY", key) != key:
        logger.warning("backend_configs.openai.api_key: RETRIEVER_API_KEY is set and wins")
    else:
        logger.warning(
            "backend_configs.openai.api_key is a literal key: it is used through RETRIEVER_API_KEY for this run "
            "and never written into the index; set RETRIEVER_API_KEY and api_key: null instead"
        )
        os.environ["RETRIEVER_API_KEY"] = key
    return Secret.from_env_var(KEY_VARIABLES, strict=False)


def _gpu_ids(value: Any, backend: str) -> list[int] | None:
    """The seed's `gpu_ids` ("0,1", 1, [0, 1], "" or null) as a list; sentence_transformers only uses it."""
    if value in (None, ""):
        return None
    parts = value if isinstance(value, list) else str(value).split(",")
    try:
        ids = [int(str(part).strip()) for part in parts]
    except ValueError:
        raise ValueError(f'gpu_ids must list GPU numbers such as "0,1", got {value!r}') from None
    if backend != "sentence_transformers":
        logger.warning(f"gpu_ids is not used by backend {backend} (infinity: backend_configs.infinity.device)")
        return None
    return ids


def _location_key(backend: str, index_backend: str) -> str:
    """The key that places the index of this backend."""
    if backend == "bm25":
        return "backend_configs.bm25.save_path"
    return "index_backend_configs.faiss.index_path" if index_backend == "faiss" else "embedding_path"


def _path(base: Path, value: Any) -> Path | None:
    """VALUE (a path in the file) resolved against the file's directory; None when absent."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ValueError(f"paths must be strings, got {value!r}")
    return base / Path(value).expanduser()


def _string(data: dict[str, Any], key: str, default: str) -> str:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {value!r}")
    return value


def _int(data: dict[str, Any], key: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key} must be an integer >= 1, got {value!r}")
    return value


def _bool(data: dict[str, Any], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value
