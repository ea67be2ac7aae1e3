"""UltraRAG's `index_backend` (faiss | milvus) and `index_backend_configs`, mapped onto `needle index` stores.

faiss: `index_path` places the index directory; `index_use_gpu` and `index_chunk_size` are accepted with a
warning (needle's FAISS store is faiss-cpu and adds vectors as the writer hands them over).
milvus: `uri` is a Milvus Lite path (it places the index directory; the database itself lives in each generation)
or a server URL (`http://host:port`, each build its own collection behind the alias `collection_name`); the token
comes from MILVUS_TOKEN only. The other keys map onto the MilvusDocumentStore settings of a needle index, which
are fixed (id / vector / contents fields, IP, AUTOINDEX): a value other than those is an error naming it.
"""

import logging
from typing import Any

from components.embedders.embedder_factory import check_options
from components.stores.milvus.settings import MilvusSettings
from needle.indexing import StoreChoice
from needle.milvus_index import is_server

logger = logging.getLogger(__name__)
INDEX_BACKENDS = ("faiss", "milvus")
FAISS_KEYS = ("index_use_gpu", "index_chunk_size", "index_path")
MILVUS_KEYS = (
    "uri", "token", "collection_name", "id_field_name", "vector_field_name", "text_field_name", "id_max_length",
    "text_max_length", "metric_type", "index_params", "search_params", "index_chunk_size",
)  # fmt: skip
# The store settings a needle Milvus index uses: the only values the file may give them.
FIXED = {
    name: getattr(MilvusSettings(), name)
    for name in ("id_field_name", "vector_field_name", "text_field_name", "id_max_length", "text_max_length")
} | {"metric_type": "IP", "index_chunk_size": MilvusSettings().index_chunk_size}


def check_index_backend(
    index_backend: str, stores: Any, collection_name: Any, dense: bool
) -> tuple[StoreChoice, str | None]:
    """(store choice, the path or URI that places the index) for INDEX_BACKEND and its block of STORES.

    :raises ValueError: An unknown index backend, key, or a value needle's index cannot honour (naming it).
    """
    if index_backend not in INDEX_BACKENDS:
        raise ValueError(f"index_backend {index_backend!r} is not supported; choose one of {', '.join(INDEX_BACKENDS)}")
    check_options("index_backend_configs", stores, INDEX_BACKENDS)
    check_options("index_backend_configs.faiss", stores.get("faiss") or {}, FAISS_KEYS)
    check_options("index_backend_configs.milvus", stores.get("milvus") or {}, MILVUS_KEYS)
    if not dense:
        return StoreChoice(), None  # bm25: no vector store; save_path places the index
    block = dict(stores.get(index_backend) or {})
    if index_backend == "faiss":
        return StoreChoice(), _faiss(block)
    return _milvus(block, collection_name)


def _faiss(block: dict[str, Any]) -> str | None:
    """The FAISS block's `index_path`, after warning about the options needle's FAISS store does not use."""
    if block.get("index_use_gpu"):
        logger.warning("index_backend_configs.faiss.index_use_gpu: needle's FAISS store runs on CPU")
    if "index_chunk_size" in block:
        logger.warning(
            "index_backend_configs.faiss.index_chunk_size: not used (needle's FAISS store adds vectors as the "
            "writer hands them over)"
        )
    path = block.get("index_path")
    if path is not None:
        logger.warning(
            f"index_backend_configs.faiss.index_path: the index directory is the one holding {path}; needle keeps "
            "its FAISS store inside it (DIR/gen-NNNNNN/dense)"
        )
    return None if path is None else str(path)


def _milvus(block: dict[str, Any], collection_name: Any) -> tuple[StoreChoice, str | None]:
    """The store choice of the Milvus block, and the Lite path that places the index (None for a server)."""
    if block.get("token") not in (None, ""):
        raise ValueError("index_backend_configs.milvus.token: put the token in MILVUS_TOKEN, not in the file")
    for key, fixed in FIXED.items():
        if key in block and block[key] != fixed:
            raise ValueError(f"index_backend_configs.milvus.{key}: a needle index uses {fixed!r}, got {block[key]!r}")
    index_params = block.get("index_params") or {}
    used = {"index_type": "AUTOINDEX", "metric_type": "IP"}
    if not isinstance(index_params, dict) or {**used, **index_params} != used:
        raise ValueError(
            f"index_backend_configs.milvus.index_params: a needle index uses AUTOINDEX with IP, got {index_params!r}"
        )
    if block.get("search_params"):
        raise ValueError("index_backend_configs.milvus.search_params: not supported through --config yet")
    collection = block.get("collection_name", collection_name) or None
    if collection is not None:
        MilvusSettings(collection_name=collection)  # ValueError naming it when Milvus cannot take the name
    uri = block.get("uri")
    if isinstance(uri, str) and is_server(uri):
        return StoreChoice("milvus", uri, collection), None
    if uri is not None:
        logger.warning(
            f"index_backend_configs.milvus.uri: the index directory is the one holding {uri}; needle keeps a Milvus "
            "Lite database in each generation (DIR/gen-NNNNNN/milvus.db)"
        )
    return StoreChoice("milvus", None, collection), None if uri is None else str(uri)
