"""What a build hands its index pipelines beyond corpus, model and paths: the corpus reader's rule for repeated ids
and the dense store's own settings (both given by UltraRAG's parameter.yaml through ``needle index --config``).

``duplicate_ids`` is the corpus reader's option (``components.converters.jsonl_corpus_reader``): ``error`` (the
default of ``needle index``) or ``position`` (UltraRAG's rule: a repeated id becomes ``<id>#<line>``).

``store_settings`` are init parameters of the dense part's document store, as UltraRAG's
``index_backend_configs`` gives them: for FAISS ``index_chunk_size`` (vectors added per FAISS call) and
``index_use_gpu`` (search on the GPUs when faiss sees any, else one warning and the CPU: the store's own rule);
for Milvus the collection's field names and lengths, ``index_params``, ``search_params``, ``index_chunk_size``
(rows per insert) and its tenants (``partition_key_field``, ``num_partitions``: ``needle index --partition-key``).
The manifest records them (``IndexManifest.store_settings``) and every search pipeline of the index opens its store
with them, so ``needle search DIR`` and ``needle serve DIR`` search the index as it was built, with no parameter
file. The writer gets all but the search-only ones.

``tenant_field`` is the meta field that tells the corpus's tenants apart (``needle index --tenant-field meta.tenant``):
the manifest records it (``IndexManifest.tenant_field``), and `needle search --tenant T` filters on it. The FAISS and
BM25 stores answer that filter from the tenant's rows alone (``components.stores.tenants``); nothing else changes.

``batch_size`` is the document embedder's texts (images) per encode batch (``needle index --batch-size``): it
changes how fast the corpus is encoded, not what is indexed, so no manifest records it and the embedding file's
fingerprint leaves it out (a file built with any batch size is reused).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from needle_retrieval.pipelines import files as pf

DUPLICATE_IDS = ("error", "position")
FAISS_SETTINGS = ("index_chunk_size", "index_use_gpu")
MILVUS_SETTINGS = (
    "id_field_name", "vector_field_name", "text_field_name", "id_max_length", "text_max_length", "index_params",
    "search_params", "index_chunk_size", "partition_key_field", "num_partitions",
)  # fmt: skip
STORE_SETTINGS = {"faiss": FAISS_SETTINGS, "milvus": MILVUS_SETTINGS}
SEARCH_ONLY = ("index_use_gpu", "search_params")  # the writer does not need them (a GPU only serves searches)


@dataclass(frozen=True)
class IndexOptions:
    """The reader's ``duplicate_ids`` rule, the dense store's ``store_settings`` and the BM25 tokenizer of one build."""

    duplicate_ids: str = "error"
    store_settings: Mapping[str, Any] = field(default_factory=dict)
    bm25_tokenizer: str | None = None  # None: the BM25 template's own (bm25s' for --lang); "lucene": Lucene's
    batch_size: int | None = None  # texts per encode batch of the document embedder; None: the embedder's own
    tenant_field: str | None = None  # the meta field of the tenants (--tenant-field), recorded; None: none

    def recorded(self) -> dict[str, Any] | None:
        """What the manifest's ``store_settings`` holds: the settings, or None when there are none."""
        return dict(self.store_settings) or None

    def apply(self, data: dict[str, Any], writes_dense: bool) -> None:
        """Set the reader's rule and (when the template WRITES_DENSE, i.e. its writer holds the dense store) the
        writer store's settings in the index template DATA."""
        if self.duplicate_ids != "error":
            pf.set_init_param(data, "reader.duplicate_ids", self.duplicate_ids)
        if not writes_dense and self.bm25_tokenizer is not None:
            pf.set_init_param(data, "writer.document_store.tokenizer", self.bm25_tokenizer)
        if writes_dense:
            for key, value in self.store_settings.items():
                if key not in SEARCH_ONLY:
                    pf.set_init_param(data, f"writer.document_store.{key}", value)
            set_batch_size(data, self.batch_size)

    def apply_sparse(self, data: dict[str, Any]) -> None:
        """Set the reader's rule and the sparse document embedder's batch size in sparse_index.yaml's DATA (the
        dense store's settings and the BM25 tokenizer are not its business)."""
        if self.duplicate_ids != "error":
            pf.set_init_param(data, "reader.duplicate_ids", self.duplicate_ids)
        set_batch_size(data, self.batch_size)


def set_batch_size(data: dict[str, Any], batch_size: int | None) -> None:
    """Give the ``embedder`` of the index template DATA BATCH_SIZE texts per encode batch (None: keep its own).

    An embedder that encodes the corpus in calls of ``encode_chunk_size`` texts gets calls of at least one batch.
    """
    if batch_size is None or "embedder" not in data["components"]:
        return
    params = data["components"]["embedder"]["init_parameters"]
    params["batch_size"] = batch_size
    if params.get("encode_chunk_size", batch_size) < batch_size:
        params["encode_chunk_size"] = batch_size


DEFAULT_OPTIONS = IndexOptions()


def check_store_settings(store: str, settings: Any) -> str | None:
    """Why SETTINGS (a manifest's ``store_settings``) cannot be the settings of a STORE index, or None."""
    if settings is None:
        return None
    if not isinstance(settings, dict) or not settings:
        return f"store_settings must be a non-empty mapping or absent, got {settings!r}"
    unknown = sorted(set(settings) - set(STORE_SETTINGS.get(store, ())))
    if unknown:
        return f"store_settings of a {store} index take {', '.join(STORE_SETTINGS.get(store, ()))}, got {unknown}"
    try:
        if store == "milvus":
            from components.stores.milvus.settings import MilvusSettings

            MilvusSettings(**settings)
        elif "index_chunk_size" in settings or "index_use_gpu" in settings:
            _check_faiss(settings)
    except ValueError as error:
        return f"store_settings: {error}"
    return None


def _check_faiss(settings: dict[str, Any]) -> None:
    """Refuse a FAISS setting of the wrong type (the store's own check needs a whole store)."""
    chunk = settings.get("index_chunk_size", 1)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"index_chunk_size must be an integer >= 1, got {chunk!r}")
    if not isinstance(settings.get("index_use_gpu", False), bool):
        raise ValueError(f"index_use_gpu must be true or false, got {settings['index_use_gpu']!r}")


def apply_store_settings(data: dict[str, Any], component: str, settings: Mapping[str, Any] | None) -> None:
    """Open COMPONENT's document store in the search pipeline DATA with an index's recorded SETTINGS."""
    for key, value in (settings or {}).items():
        pf.set_init_param(data, f"{component}.document_store.{key}", value)
