"""UltraRAG's `index_backend` (faiss | milvus) and `index_backend_configs`, mapped onto `needle index` stores.

Every key of both blocks means what it means in UltraRAG. Only the chosen backend's block is used, as there: a
key needle does not know is an error in it, and in any other block (or a block of a backend needle does not
know, or both blocks for a BM25 backend) one the caller warns about and ignores, as UltraRAG never reads them;
the keys needle knows are type-checked in every block.

- faiss: `index_path` is the index directory itself (UltraRAG's FAISS file becomes needle's directory of
  generations there, so the faiss, Milvus and BM25 indexes of one file never share a directory);
  `index_chunk_size` is the number of vectors added to FAISS per call; `index_use_gpu: true` searches on the GPUs
  when faiss sees any, else the CPU after one warning (as UltraRAG falls back to the CPU). needle's own keys choose
  the FAISS index as `needle index --index-type` and its flags do: `index_type` (flat, hnsw, sq8, hnsw-sq8,
  ivf-flat, ivf-sq8, ivf-pq) and its settings `hnsw_m`, `ef_construction`, `ef_search`, `nlist`, `nprobe`, `pq_m`
  (``needle_retrieval.index.dense_type``: a setting of another type is refused, naming it).
- milvus: `uri` is a Milvus Lite path, which is the index directory itself (each generation keeps its own
  database inside it), or a server URL (`http://host:port`; each build its own collection behind the alias
  `collection_name`: the top-level one, else the block's, as UltraRAG's top-level value replaces the block's;
  FAISS and BM25 ignore it, as UltraRAG does). A literal `token` is used through MILVUS_TOKEN for this run, never
  written anywhere.
  `id_field_name`, `vector_field_name`, `text_field_name`, `id_max_length`, `text_max_length`, `index_params`,
  `search_params`, `index_chunk_size` (rows per insert), `partition_key_field` (tenants: the corpus key, e.g.
  `tenant`, stored as Milvus's partition key) and `num_partitions` are the collection's settings. `metric_type`
  (here and inside `index_params` / `search_params`) must be IP: needle's searches and fusion read inner products.

The store settings are recorded in the index (``needle_retrieval.index.options``), so every later search uses them.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from components.stores.milvus.settings import MilvusSettings
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.dense_type import FLAT, RANGES, DenseIndexType
from needle_retrieval.index.milvus_place import DEFAULT_COLLECTION, is_server
from needle_retrieval.ultrarag.keys import take_literal
from needle_retrieval.ultrarag.options import (
    OPTIONAL_BOOL,
    OPTIONAL_INT,
    OPTIONAL_MAPPING,
    OPTIONAL_STRING,
    OptionType,
    check_options,
    check_types,
    options_block,
)
from needle_retrieval.ultrarag.values import unknown_keys

if TYPE_CHECKING:  # needle_retrieval.index imports Haystack: only when a config is checked
    from needle_retrieval.index.build import StoreChoice

INDEX_BACKENDS = ("faiss", "milvus")
METRIC = "IP"  # the metric of every needle Milvus collection (needle_retrieval.index.milvus_place.store_params)
SEARCH_PARAM_KEYS = ("metric_type", "params")
# The type of every key of both blocks (null: the store's default, as UltraRAG leaves it out).
TYPES: dict[str, dict[str, OptionType]] = {
    "faiss": {
        "index_path": OPTIONAL_STRING,
        "index_chunk_size": OPTIONAL_INT,
        "index_use_gpu": OPTIONAL_BOOL,
        "index_type": OPTIONAL_STRING,
        **dict.fromkeys(RANGES, OPTIONAL_INT),  # the index type's settings, as needle index's flags
    },
    "milvus": {
        "uri": OPTIONAL_STRING,
        "token": OPTIONAL_STRING,
        "collection_name": OPTIONAL_STRING,
        "metric_type": OPTIONAL_STRING,
        "id_field_name": OPTIONAL_STRING,
        "vector_field_name": OPTIONAL_STRING,
        "text_field_name": OPTIONAL_STRING,
        "id_max_length": OPTIONAL_INT,
        "text_max_length": OPTIONAL_INT,
        "index_params": OPTIONAL_MAPPING,
        "search_params": OPTIONAL_MAPPING,
        "index_chunk_size": OPTIONAL_INT,
        "partition_key_field": OPTIONAL_STRING,
        "num_partitions": OPTIONAL_INT,
    },
}
FAISS_KEYS, MILVUS_KEYS = tuple(TYPES["faiss"]), tuple(TYPES["milvus"])  # every key of each block
KEYS = {"faiss": FAISS_KEYS, "milvus": MILVUS_KEYS}


def _faiss_choice() -> "StoreChoice":
    """The default target: FAISS in the index directory."""
    from needle_retrieval.index.build import StoreChoice

    return StoreChoice()


@dataclass(frozen=True)
class IndexBackend:
    """Where the dense part goes and with which store settings.

    ``location``: the path (relative to the working directory) that is the index directory -- faiss
    `index_path` or a Milvus Lite `uri`; None for BM25 (its `save_path` places it) and for a Milvus server (nothing
    local names it).
    """

    target: "StoreChoice" = field(default_factory=_faiss_choice)
    settings: dict[str, Any] = field(default_factory=dict)
    location: str | None = None
    index_type: DenseIndexType = FLAT


def check_index_backend(
    index_backend: str, stores: Any, collection_name: Any, dense: bool, ignored: list[str]
) -> IndexBackend:
    """The store, its settings and the path that places the index, for INDEX_BACKEND and its block of STORES.

    The chosen block (none for a BM25 backend: not DENSE) must hold known keys only; the names of unknown keys and
    blocks elsewhere are added to IGNORED. Known keys are type-checked in both blocks.

    :raises ValueError: An unknown index backend, key of the chosen block (all of them named), a value of the wrong
        type (naming its key path), or a value needle's index cannot honour (naming it).
    """
    if index_backend not in INDEX_BACKENDS:
        raise ValueError(f"index_backend {index_backend!r} is not supported; choose one of {', '.join(INDEX_BACKENDS)}")
    stores = options_block("index_backend_configs", stores)
    ignored += unknown_keys("index_backend_configs", stores, INDEX_BACKENDS)
    blocks = {name: options_block(f"index_backend_configs.{name}", stores.get(name)) for name in INDEX_BACKENDS}
    for name, block in blocks.items():
        where = f"index_backend_configs.{name}"
        if dense and name == index_backend:
            check_options(where, block, KEYS[name])
        else:
            ignored += unknown_keys(where, block, KEYS[name])
        check_types(where, block, TYPES[name])
    if not dense:
        return IndexBackend()  # bm25: no vector store; save_path places the index
    block = blocks[index_backend]
    if index_backend == "faiss":
        return _faiss(block)
    return _milvus(block, collection_name)


def _faiss(block: dict[str, Any]) -> IndexBackend:
    """The FAISS block: `index_path` places the index, the other keys are the FAISS store's settings."""
    settings: dict[str, Any] = {}
    chunk = block.get("index_chunk_size")
    if chunk is not None:
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise ValueError(f"index_backend_configs.faiss.index_chunk_size must be an integer >= 1, got {chunk!r}")
        settings["index_chunk_size"] = chunk
    use_gpu = block.get("index_use_gpu")
    if use_gpu is not None:
        if not isinstance(use_gpu, bool):
            raise ValueError(f"index_backend_configs.faiss.index_use_gpu must be true or false, got {use_gpu!r}")
        settings["index_use_gpu"] = use_gpu
    location = _location("index_backend_configs.faiss.index_path", block)
    return IndexBackend(_faiss_choice(), settings, location, _index_type(block))


def _index_type(block: dict[str, Any]) -> DenseIndexType:
    """The FAISS index the block's `index_type` and settings choose (flat when absent), as `needle index
    --index-type` and its flags choose it; a ValueError names the key."""
    where = "index_backend_configs.faiss"
    settings = {name: block[name] for name in RANGES if block.get(name) is not None}
    kind = block.get("index_type") or "flat"
    try:
        return DenseIndexType.from_flags(kind, **settings)
    except NeedleError as error:  # the flags' words, said in the file's keys
        text = str(error).replace(f"(this build is --index-type {kind})", f"(index_type is {kind})")
        text = text.replace("--index-type", f"{where}.index_type")
        for name in RANGES:
            text = text.replace(f"--{name.replace('_', '-')}", f"{where}.{name}")
        raise ValueError(text) from None


def _milvus(block: dict[str, Any], collection_name: Any) -> IndexBackend:
    """The Milvus block: its place (Lite path or server), token, collection (COLLECTION_NAME, the top-level one,
    else the block's) and the collection's settings."""
    from needle_retrieval.index.build import StoreChoice
    from needle_retrieval.index.options import MILVUS_SETTINGS

    uri = block.get("uri")
    take_literal("index_backend_configs.milvus.token", block.get("token"), "MILVUS_TOKEN", "token")
    metric = block.get("metric_type", METRIC)
    if metric != METRIC:
        raise ValueError(f"index_backend_configs.milvus.metric_type: a needle index uses {METRIC!r}, got {metric!r}")
    settings = {key: block[key] for key in MILVUS_SETTINGS if block.get(key) is not None}
    if "search_params" in settings:
        settings["search_params"] = _search_params(settings["search_params"])
    collection = collection_name or block.get("collection_name") or None
    try:
        MilvusSettings(collection_name=collection or DEFAULT_COLLECTION, metric_type=METRIC, **settings)
    except (TypeError, ValueError) as error:
        raise ValueError(f"index_backend_configs.milvus: {error}") from None
    if isinstance(uri, str) and is_server(uri):
        return IndexBackend(StoreChoice("milvus", uri, collection), settings, None)
    location = _location("index_backend_configs.milvus.uri", block, "uri")
    return IndexBackend(StoreChoice("milvus", None, collection), settings, location)


def _search_params(value: Any) -> dict[str, Any]:
    """UltraRAG's `search_params` ({metric_type, params}) checked: IP, and `params` a mapping for Milvus."""
    where = "index_backend_configs.milvus.search_params"
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a mapping such as {{metric_type: IP, params: {{}}}}, got {value!r}")
    check_options(where, value, SEARCH_PARAM_KEYS)
    if value.get("metric_type", METRIC) != METRIC:
        raise ValueError(f"{where}.metric_type: a needle index uses {METRIC!r}, got {value['metric_type']!r}")
    if not isinstance(value.get("params") or {}, dict):
        raise ValueError(f"{where}.params must be a mapping of Milvus search parameters, got {value['params']!r}")
    return {"metric_type": METRIC, "params": dict(value.get("params") or {})}


def _location(key: str, block: dict[str, Any], name: str = "index_path") -> str | None:
    """The block's path that is the index directory (KEY names it in errors), or None when absent."""
    value = block.get(name)
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a path, got {value!r}")
    return value
