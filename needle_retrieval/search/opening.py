"""Open an index directory for search: the one way every entry point turns an index and a mode into a runner.

``open_search`` fills the mode's search template for the index's generation, applies the search-time settings
(``SearchKnobs``: fusion, trust, BM25 threads, nprobe/ef_search, minimum score), builds the pipeline and returns its
``SearchRunner`` (``needle_retrieval.pipelines.runner``), after the checks every entry point gets, in this order:

1. the mode is one of ``MODES`` and the index has its parts (an image index answers dense text queries only);
2. a query model named by the caller is the one the index was built with;
3. every document store holds the number of documents the manifest lists (this loads the stores, which pins the
   generation: its files stay readable once open);
4. a probe query runs through the whole pipeline with the instruction the searches will use, so a part that loads
   lazily and is broken, or a bad instruction, stops the caller now rather than failing its first user's query;
5. the query embedder's vector for it has the index's dimension.

`needle search`, ``Searcher`` (and so `needle eval` and `needle tune`), `needle serve`'s ``POST /<mode>_search/run``,
``POST /search`` and MCP tools (``needle mcp`` too), and the Hayhooks wrappers of `hayhooks run` all open here; the
run-time inputs (``top_k``, the query instruction) then go in through ``SearchPlan.feed``.
"""

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from haystack import Pipeline

from needle_retrieval.defaults import MODES  # defined light, for the parser
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import rebuild_hint
from needle_retrieval.index.generations import live_name
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.templates import fill_search_pipeline, set_search_time
from needle_retrieval.index.trust import Trust
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.feed import SearchPlan
from needle_retrieval.pipelines.fusion import FusionSetting, index_fusion
from needle_retrieval.pipelines.runner import Outputs, SearchRunner

PROBE_QUERY = "needle start-up probe"
BM25_RETRIEVERS = {  # the bm25s retrievers of the batch search templates, which score a batch over n_threads
    "components.retrievers.bm25.batch_retriever.BM25BatchRetriever",
    "components.retrievers.bm25.batch_candidate_retriever.BM25BatchCandidateRetriever",
}


@dataclass(frozen=True)
class SearchKnobs:
    """The search-time settings of an opened index: none changes the index, each is for this opening only.

    ``fusion``: the fused modes' parameters (None: the index's own, DIR/fusion.json or the defaults); ``trust``: what
    the index's pipeline may use (None: what the ``NEEDLE_*`` variables allow); ``bm25_threads``: the bm25s
    retrievers' ``n_threads`` (None: every core); ``nprobe`` / ``ef_search``: an IVF / HNSW index's search width (None:
    the recorded one); ``min_score``: the answering component's ``score_threshold`` (None: keep every hit);
    ``tenant``: search only this tenant's documents (``needle_retrieval.search.inputs.tenant_filters``; None: all).
    """

    fusion: FusionSetting | None = None
    trust: Trust | None = None
    bm25_threads: int | None = None
    nprobe: int | None = None
    ef_search: int | None = None
    min_score: float | None = None
    tenant: str | None = None


@dataclass(frozen=True)
class OpenedSearch:
    """An index opened for one mode: its manifest, the filled pipeline dict and the runner that answers."""

    index_dir: Path
    manifest: IndexManifest
    mode: str
    data: dict[str, Any]
    runner: SearchRunner

    @property
    def pipeline(self) -> Pipeline:
        """The built, warmed-up pipeline the runner runs."""
        return self.runner.pipeline


def best_mode(manifest: IndexManifest) -> str:
    """Hybrid when the index has a dense part and one to fuse with it (learned sparse, else BM25), else whichever
    part it has."""
    return "hybrid" if manifest.fused_side else manifest.modes[0]


def check_mode(manifest: IndexManifest, mode: str, index_dir: Path) -> None:
    """Refuse a mode the index was not built for, saying how to build it."""
    needed = {"dense", manifest.fused_side or "bm25"} if mode in ("hybrid", "rrf") else {mode}
    missing = needed - set(manifest.modes)
    if missing:
        flags = {"bm25": " --bm25", "sparse": " --sparse MODEL"}
        raise NeedleError(
            f"index {index_dir} has no {' or '.join(sorted(missing))} part (it has: {', '.join(manifest.modes)}); "
            f"rebuild it with `needle index CORPUS --out {index_dir}"
            f"{''.join(flags.get(part, '') for part in sorted(missing))}`"
        )


def check_model(manifest: IndexManifest, model: str | None, index_dir: Path) -> None:
    """Refuse a query model other than the one the index was built with."""
    if model and manifest.model and model != manifest.model:
        raise NeedleError(
            f"index {index_dir} was built with model {manifest.model} (dimension {manifest.dim}); "
            f"it cannot be searched with {model}: drop --model or rebuild the index with it"
        )


def set_bm25_threads(data: dict[str, Any], threads: int) -> None:
    """Score every batch with THREADS threads in the BM25 retrievers of the search pipeline DATA."""
    for component in data["components"].values():
        if component["type"] in BM25_RETRIEVERS:
            component["init_parameters"]["n_threads"] = threads


def set_min_score(data: dict[str, Any], min_score: float) -> None:
    """Make MIN_SCORE the ``score_threshold`` of the component that answers the search pipeline DATA (its
    ``outputs.documents``: the retriever of a dense or BM25 search, the fusion stage of a hybrid or rrf one)."""
    answering = data["outputs"]["documents"].split(".", 1)[0]
    data["components"][answering].setdefault("init_parameters", {})["score_threshold"] = min_score


def search_data(index_dir: Path, manifest: IndexManifest, mode: str, batch: bool, knobs: SearchKnobs) -> dict[str, Any]:
    """MODE's search pipeline dict for the manifest's generation, with KNOBS applied; the mode and its parts checked
    first (nothing is built for a mode the index cannot answer)."""
    if mode not in MODES:
        raise NeedleError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if manifest.multimodal:  # an image index answers dense text queries only (needle_retrieval.index.images)
        from needle_retrieval.index.images import check_image_mode

        check_image_mode(manifest, mode, index_dir)
    check_mode(manifest, mode, index_dir)
    data = fill_search_pipeline(index_dir, manifest, manifest.template(mode, batch=batch), knobs.fusion, knobs.trust)
    if knobs.bm25_threads is not None:
        set_bm25_threads(data, knobs.bm25_threads)
    if (knobs.nprobe, knobs.ef_search) != (None, None):
        set_search_time(data, manifest, knobs.nprobe, knobs.ef_search)
    if knobs.min_score is not None:
        set_min_score(data, knobs.min_score)
    if knobs.tenant is not None:
        from needle_retrieval.search.inputs import set_tenant_filters, tenant_filters

        set_tenant_filters(data, tenant_filters(manifest, knobs.tenant, index_dir))
    return data


def share_stores(pipeline: Pipeline, stores: dict[str, Any]) -> None:
    """
    Point each retriever of PIPELINE at the one store object of its store's configuration, so that the index
    is opened once for all the pipelines opened with the same STORES (stores load lazily, so the later copies never
    open anything).

    The stores serialise their settings only, so equal ``to_dict`` output means the same index part; their own
    locks serialise the requests that share them.
    """
    for _, component in pipeline.walk():
        store = getattr(component, "document_store", None)
        if store is not None:
            key = json.dumps(store.to_dict(), sort_keys=True, default=str)
            component.document_store = stores.setdefault(key, store)  # type: ignore[attr-defined]


def check_parts(pipeline: Pipeline, manifest: IndexManifest, index_dir: Path) -> None:
    """Load every document store of PIPELINE and compare its count with the manifest's, naming the part that
    differs: a missing or damaged part is an error here rather than an empty answer later."""
    for name, component in pipeline.walk():
        store = getattr(component, "document_store", None)
        if store is None:
            continue
        count = store.count_documents()
        if count != manifest.documents:
            raise NeedleError(
                f"index {index_dir} is damaged: generation {manifest.generation} lists {manifest.documents} "
                f"documents but the store of `{name}` holds {count}; {rebuild_hint(index_dir)}"
            )


def check_dimension(found: Outputs, manifest: IndexManifest, index_dir: Path) -> None:
    """Compare the size of the query vector in a probe's outputs FOUND with the index's."""
    embedded = found["embedder"]
    dim = len(embedded["embeddings"][0] if "embeddings" in embedded else embedded["embedding"])
    if dim != manifest.dim:
        raise NeedleError(
            f"index {index_dir} holds {manifest.dim}-dimensional vectors but model {manifest.model} gives {dim}: "
            "rebuild the index with `needle index`"
        )


def probe(runner: SearchRunner, manifest: IndexManifest, index_dir: Path, instruction: str | None) -> None:
    """Run a probe query through the whole pipeline with the instruction the searches will use (a part that loads
    lazily and is broken, or a bad instruction, fails here), and check the query embedder's vector size with the
    index's. When the run fails, the embedder alone is asked, so that a model of another size is named as such
    rather than as the store's error about it."""
    query: str | list[str] = [PROBE_QUERY] if runner.plan.batch else PROBE_QUERY
    embeds = "embedder" in runner.pipeline.graph.nodes
    try:
        found = runner.every_output(query, instruction, frozenset({"embedder"} if embeds else ()))
    except Exception:
        if embeds:
            inputs = runner.plan.feed(query, None, instruction)["embedder"]
            check_dimension({"embedder": runner.pipeline.get_component("embedder").run(**inputs)}, manifest, index_dir)
        raise
    if embeds:
        check_dimension(found, manifest, index_dir)


def open_generation(
    index_dir: Path,
    manifest: IndexManifest,
    mode: str,
    *,
    batch: bool,
    model: str | None,
    knobs: SearchKnobs,
    query_instruction: str | None,
    stores: dict[str, Any] | None,
    wrap_errors: bool,
) -> OpenedSearch:
    """``open_search`` on one generation's MANIFEST, without the retry."""
    check_model(manifest, model, index_dir)
    data = search_data(index_dir, manifest, mode, batch, knobs)
    pipeline = pf.build(data)
    if stores is not None:
        share_stores(pipeline, stores)
    plan = SearchPlan.of(data, "queries" if batch else "query")
    runner = SearchRunner(pipeline, plan, warm=True, wrap_errors=wrap_errors)
    try:
        check_parts(pipeline, manifest, index_dir)
        pipeline.warm_up()
        probe(runner, manifest, index_dir, query_instruction)
    except BaseException:
        close_runner(manifest, pipeline)
        raise
    return OpenedSearch(index_dir, manifest, mode, data, runner)


def open_search(
    index_dir: Path,
    mode: str | None = None,
    *,
    batch: bool = True,
    model: str | None = None,
    knobs: SearchKnobs | None = None,
    query_instruction: str | None = None,
    manifest: IndexManifest | None = None,
    stores: dict[str, Any] | None = None,
    wrap_errors: bool = False,
) -> OpenedSearch:
    """Open INDEX_DIR for MODE (None: hybrid when it has dense and BM25 parts, else its one mode) after the checks of
    the module docstring.

    :param batch: The batch pipeline (queries in a list, one list of hits per query) rather than the one-query one.
    :param model: The query model the caller names (`needle search --model`); None: the index's.
    :param knobs: The search-time settings (``SearchKnobs``); None: the index's own for all of them. A ``fusion`` of
        None is resolved here, once (``index_fusion``).
    :param query_instruction: The instruction the checks embed with, as the searches will (None: the recorded one).
    :param manifest: The generation to open (a Hayhooks wrapper's, or the one a server deploys every pipeline of);
        None: the live one, read here and read again once if it was replaced while being opened.
    :param stores: Document stores shared with other pipelines opened with the same dict (``share_stores``).
    :param wrap_errors: A component's error comes wrapped as ``Pipeline.run`` raises it (the served routes map it).
    """
    index_dir = Path(index_dir)
    knobs = knobs or SearchKnobs()
    if knobs.fusion is None:
        knobs = replace(knobs, fusion=index_fusion(index_dir))

    def open_one(generation: IndexManifest) -> OpenedSearch:
        return open_generation(
            index_dir, generation, mode or best_mode(generation), batch=batch, model=model, knobs=knobs,
            query_instruction=query_instruction, stores=stores, wrap_errors=wrap_errors,
        )  # fmt: skip

    if manifest is not None:
        return open_one(manifest)
    live = IndexManifest.load(index_dir)
    try:
        return open_one(live)
    except Exception:  # whatever a generation removed mid-open raised (SQLite, FAISS, a missing file)
        if live_name(index_dir) == live.generation:
            raise
    return open_one(IndexManifest.load(index_dir))  # replaced while it was being opened: the new one, once


def close_runner(manifest: IndexManifest, pipeline: Pipeline) -> None:
    """Close the Milvus connections of a Milvus index's pipeline, so that its Lite database is free for other
    processes (and for this one at another path, after a move). FAISS and BM25 stores hold no lock."""
    if manifest.store == "milvus":
        from needle_retrieval.index.milvus import close_stores

        close_stores(pipeline)
