"""The search pipelines of an index generation: the templates in ``pipelines/`` filled in for its parts.

``save_search_pipelines`` writes DIR/gen-NNNNNN/<mode>_search.yaml with paths relative to DIR (they load with DIR as
the working directory) and, beside each, the Hayhooks wrapper that serves it from anywhere
(DIR/gen-NNNNNN/hayhooks/<mode>_search/pipeline_wrapper.py, see ``needle_retrieval.serve.hayhooks``).
``fill_search_pipeline`` gives the same pipelines with absolute paths for wherever DIR is now. Both carry a fusion
setting (``needle_retrieval.pipelines.fusion``): a saved generation the index's own (DIR/fusion.json when `needle tune`
wrote one, else the defaults), a pipeline built in memory that one or the setting its caller names (``--fusion``).
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.embedders.embedder_roles import EmbedderRole, sparse_embedder_type
from needle_retrieval.defaults import DEFAULT_TOP_K, HAYHOOKS_DIR
from needle_retrieval.index.dense_type import DenseIndexType
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.milvus_place import MilvusPlace, store_params
from needle_retrieval.index.options import apply_store_settings
from needle_retrieval.index.trust import Trust, check_pipeline
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.embedders import set_query_embedder
from needle_retrieval.pipelines.feed import SearchPlan
from needle_retrieval.pipelines.fusion import FusionSetting, apply_fusion, index_fusion

# The document store classes of the search templates, by the qualified names their `type` fields hold (named, not
# imported: Milvus's imports pymilvus, which a FAISS search never loads).
FAISS_STORE = "components.stores.faiss.document_store.FAISSDocumentStore"
BM25_STORE = "components.stores.bm25.document_store.BM25DocumentStore"
MILVUS_STORE = "components.stores.milvus.document_store.MilvusDocumentStore"
SPARSE_STORE = "components.stores.sparse.document_store.SparseDocumentStore"
FUSED = ("hybrid", "hybrid_batch", "rrf", "rrf_batch")  # the FAISS templates that fuse dense with the bm25 component


def search_pipeline(base: Path, manifest: IndexManifest, name: str) -> dict[str, Any]:
    """Fill pipelines/<name>_search.yaml with the paths of the manifest's generation under BASE and its model.

    ``name`` is a template name (``IndexManifest.template``), e.g. ``dense``, ``hybrid_batch`` or ``milvus_mix``.
    The pipeline's own ``top_k`` (what a run that names none gets) is ``DEFAULT_TOP_K``; a request's goes in at run
    time (``SearchPlan.feed``).
    """
    data = pf.load_template(f"{name}_search")
    root = base / manifest.generation
    if "embedder" in data["components"]:
        set_query_embedder(data, manifest.model, manifest.embedder, batch=name.endswith("_batch"))
    if name in FUSED and manifest.fused_side == "sparse":
        fuse_learned_sparse(data, batch=name.endswith("_batch"))
    if "sparse_embedder" in data["components"]:
        pf.set_init_param(data, "sparse_embedder.model", manifest.sparse_model)
    for component, spec in data["components"].items():
        store = spec["init_parameters"].get("document_store")
        if store is not None:
            STORE_FILLERS[store["type"]](data, component, manifest, root)
    set_default_top_k(data)
    return data


def _set_faiss_store(data: dict[str, Any], component: str, manifest: IndexManifest, root: Path) -> None:
    """Point a FAISS store at the generation's dense part, with the index type and store settings it recorded."""
    pf.set_init_param(data, f"{component}.document_store.path", str(root / "dense"))
    set_index_type(data, component, DenseIndexType.from_recorded(manifest.dense_index))
    apply_store_settings(data, component, manifest.store_settings)


def _set_bm25_store(data: dict[str, Any], component: str, manifest: IndexManifest, root: Path) -> None:
    """Point a BM25 store at the generation's bm25 part, sharing the dense part's document table when it has one."""
    pf.set_init_param(data, f"{component}.document_store.path", str(root / "bm25"))
    shared = str(root / "dense") if "dense" in manifest.modes else None
    pf.set_init_param(data, f"{component}.document_store.document_store_path", shared)


def _set_sparse_store(data: dict[str, Any], component: str, manifest: IndexManifest, root: Path) -> None:
    """Point a sparse store at the generation's sparse part, sharing the dense part's documents when it has one."""
    pf.set_init_param(data, f"{component}.document_store.path", str(root / "sparse"))
    shared = str(root / "dense") if "dense" in manifest.modes else None
    pf.set_init_param(data, f"{component}.document_store.document_store_path", shared)


# The learned sparse side of a fused template, by batch-ness: its retriever (the batch templates hand Candidates to
# their joiner, as their BM25 side does) and the sockets between it and its query embedder.
_SPARSE_SIDE = {
    False: (
        "components.retrievers.sparse.retriever.SparseEmbeddingRetriever",
        ("text", "sparse_embedding", "query_sparse_embedding"),
    ),
    True: (
        "components.retrievers.sparse.batch_candidate_retriever.SparseEmbeddingBatchCandidateRetriever",
        ("texts", "sparse_embeddings", "query_sparse_embeddings"),
    ),
}


def fuse_learned_sparse(data: dict[str, Any], batch: bool) -> None:
    """Make a FAISS hybrid or rrf template DATA fuse dense with the learned sparse part instead of BM25: its ``bm25``
    component becomes ``sparse_embedder`` -> ``sparse`` (same ``top_k``, same joiner socket), fed the same query.

    The sparse embedder takes no ``query_instruction``: an instruction is the dense model's, and a request's goes to
    the dense embedder alone (``needle_retrieval.pipelines.feed``).
    """
    retriever, (text, vector, query_vector) = _SPARSE_SIDE[batch]
    embedder = sparse_embedder_type("sentence_transformers", EmbedderRole.for_queries(batch))
    bm25 = data["components"].pop("bm25")
    data["components"]["sparse_embedder"] = {"type": embedder, "init_parameters": {"progress_bar": False}}
    data["components"]["sparse"] = {
        "type": retriever,
        "init_parameters": {
            "top_k": bm25["init_parameters"]["top_k"],
            "document_store": {"type": SPARSE_STORE, "init_parameters": {}},
        },
    }
    for connection in data["connections"]:
        if connection["sender"].startswith("bm25."):
            connection["sender"] = "sparse." + connection["sender"].removeprefix("bm25.")
    data["connections"].insert(0, {"sender": f"sparse_embedder.{vector}", "receiver": f"sparse.{query_vector}"})
    for name, targets in data["inputs"].items():
        listed = targets if isinstance(targets, list) else [targets]
        data["inputs"][name] = [f"sparse_embedder.{text}" if t.startswith("bm25.") else t for t in listed]


def set_default_top_k(data: dict[str, Any]) -> None:
    """Give the pipeline ``DEFAULT_TOP_K`` hits of its own, by the feed's rule (``SearchPlan.top_k_values``): what
    a saved pipeline file answers, and a served route without a request ``top_k``."""
    plan = SearchPlan.of(data, next(iter(data["inputs"])))
    for component, value in plan.top_k_values(DEFAULT_TOP_K).items():
        pf.set_init_param(data, f"{component}.top_k", value)


def _set_milvus_store(data: dict[str, Any], component: str, manifest: IndexManifest, root: Path) -> None:
    """Point a Milvus store at the generation's collection (its Lite database under ROOT, or the server)."""
    place = MilvusPlace(str(manifest.uri), str(manifest.collection))  # both strings: IndexManifest.check
    params = store_params(place.uri_under(root), place.collection, "bm25" in manifest.modes, manifest.bm25_lang)
    for key, value in params.items():
        pf.set_init_param(data, f"{component}.document_store.{key}", value)
    apply_store_settings(data, component, manifest.store_settings)


StoreFiller = Callable[[dict[str, Any], str, IndexManifest, Path], None]
# How a template's document store is pointed at a generation, by the store's class (its serialized `type`, the
# qualified name Haystack writes): a store class without an entry is a KeyError naming it, never a guess.
STORE_FILLERS: dict[str, StoreFiller] = {
    FAISS_STORE: _set_faiss_store,
    BM25_STORE: _set_bm25_store,
    MILVUS_STORE: _set_milvus_store,
    SPARSE_STORE: _set_sparse_store,
}


def fill_search_pipeline(
    index_dir: Path,
    manifest: IndexManifest,
    name: str,
    fusion: FusionSetting | None = None,
    trust: Trust | None = None,
) -> dict[str, Any]:
    """Fill pipelines/<name>_search.yaml with absolute paths of the manifest's generation where DIR is now,
    and the fusion parameters of FUSION (None: the index's own, ``needle_retrieval.pipelines.fusion.index_fusion``).

    The manifest was read from DIR, so it may be someone else's: the pipeline may run model code, contact a server
    or read a key variable only where TRUST (None: ``Trust.from_environment()``) allows it
    (``needle_retrieval.index.trust``).

    :raises NeedleError: the pipeline would use something TRUST does not allow, saying what to pass.
    """
    setting = index_fusion(Path(index_dir)) if fusion is None else fusion
    data = apply_fusion(search_pipeline(Path(index_dir).resolve(), manifest, name), setting)
    check_pipeline(data, Trust.from_environment() if trust is None else trust, f"index {index_dir}")
    return data


def save_search_pipelines(generation: Path, manifest: IndexManifest, modes: list[str]) -> None:
    """Write <mode>_search.yaml for each mode into GENERATION, with paths relative to the index directory, and the
    Hayhooks wrapper that serves it (``save_hayhooks_wrapper``). The pipelines carry the index's own fusion
    setting as it is now: `needle tune` and `needle tune --reset` publish a new generation to change it."""
    setting = index_fusion(generation.parent)
    for mode in modes:
        data = apply_fusion(search_pipeline(Path("."), manifest, manifest.template(mode)), setting)
        pf.dump(data, generation / f"{mode}_search.yaml")
        save_hayhooks_wrapper(generation, f"{mode}_search")


HAYHOOKS_WRAPPER = '''"""Hayhooks pipeline `{name}`: this index generation's {name}.yaml, as `needle index` wrote it.

Serve every search pipeline of the generation with `hayhooks run --pipelines-dir DIR/gen-NNNNNN/hayhooks`
(from any working directory, no other set-up); see needle_retrieval/serve/hayhooks.py.
"""

from needle_retrieval.serve.hayhooks import SearchPipelineWrapper


class PipelineWrapper(SearchPipelineWrapper):
    pipeline_file = "{name}.yaml"
'''


def save_hayhooks_wrapper(generation: Path, name: str) -> None:
    """Write GENERATION/hayhooks/NAME/pipeline_wrapper.py: a Hayhooks pipeline that serves GENERATION/NAME.yaml.

    A wrapper rather than the YAML file itself, which Hayhooks 2.1 serves only with an allowlist set by hand, with
    its relative paths against the server's working directory, every declared input required (so no optional
    ``top_k``) and every error a 500. The wrapper names no path: the index can still be moved.
    """
    folder = generation / HAYHOOKS_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pipeline_wrapper.py").write_text(HAYHOOKS_WRAPPER.format(name=name), encoding="utf-8")


def set_search_time(data: dict[str, Any], manifest: IndexManifest, nprobe: int | None, ef_search: int | None) -> None:
    """Search DATA's FAISS stores with NPROBE / EF_SEARCH (None: the index's own) instead of the values the index
    recorded: recall against speed for one search, no rebuild.

    :raises NeedleError: A setting the index's type does not have (e.g. ``--nprobe`` on a flat index), naming it.
    """
    recorded = DenseIndexType.from_recorded(manifest.dense_index)
    index_type = recorded.with_search(nprobe=nprobe, ef_search=ef_search)
    for component, spec in data["components"].items():
        store = spec["init_parameters"].get("document_store")
        if store is not None and store["type"] == FAISS_STORE:
            set_index_type(data, component, index_type)


def set_index_type(data: dict[str, Any], component: str, index_type: DenseIndexType) -> None:
    """Give COMPONENT's FAISS store the index type's ``index_factory`` and ``search_params``."""
    pf.set_init_param(data, f"{component}.document_store.index_factory", index_type.factory())
    if index_type.search_params() is not None:
        pf.set_init_param(data, f"{component}.document_store.search_params", index_type.search_params())
