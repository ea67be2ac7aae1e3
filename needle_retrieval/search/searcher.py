"""Search an index directory through the YAML search pipelines, in dense, BM25, hybrid or rrf mode.

The index's manifest says which store holds it, so the same modes search FAISS + bm25s or one Milvus
collection (``IndexManifest.template`` picks the pipeline); nothing else changes for the caller. Every mode runs
its batch pipeline, all queries in one run (a single query too: one run costs the same pipeline overhead whatever
the number of queries), fed by the rule every entry point shares (``needle_retrieval.pipelines.feed``): ``top_k`` and
the query instruction go in at run time. A minimum score (``min_score``, `needle search --min-score`) becomes the
``score_threshold`` of the component that answers (``set_min_score``): it applies to the final hits, after fusion in
hybrid and rrf mode.
"""

from pathlib import Path
from typing import Any

from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.checks import check_queries, check_score_threshold, check_top_k
from needle_retrieval.defaults import DEFAULT_TOP_K, MODES  # defined light, for the parser
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import rebuild_hint
from needle_retrieval.index.generations import live_name
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.templates import fill_search_pipeline, set_search_time
from needle_retrieval.index.trust import Trust
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.fusion import FusionSetting, index_fusion

BM25_RETRIEVERS = {  # the bm25s retrievers of the batch search templates, which score a batch over n_threads
    "components.retrievers.bm25.batch_retriever.BM25BatchRetriever",
    "components.retrievers.bm25.batch_candidate_retriever.BM25BatchCandidateRetriever",
}


def best_mode(manifest: IndexManifest) -> str:
    """Hybrid when the index has both dense and BM25 parts, else whichever it has."""
    return "hybrid" if {"dense", "bm25"} <= set(manifest.modes) else manifest.modes[0]


def check_mode(manifest: IndexManifest, mode: str, index_dir: Path) -> None:
    """Refuse a mode the index was not built for, saying how to build it."""
    needed = {"dense", "bm25"} if mode in ("hybrid", "rrf") else {mode}
    missing = needed - set(manifest.modes)
    if missing:
        raise NeedleError(
            f"index {index_dir} has no {' or '.join(sorted(missing))} part (it has: {', '.join(manifest.modes)}); "
            f"rebuild it with `needle index CORPUS --out {index_dir}"
            f"{' --bm25' if 'bm25' in missing else ''}`"
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


class Searcher:
    """
    Builds the search pipeline for one index and mode once, then answers batches of queries.

    It opens the generation live when it starts and keeps answering from it, even after a rebuild switches
    the index to a newer one; a generation removed while it was being opened is retried once from the pointer.
    """

    def __init__(
        self,
        index_dir: Path,
        mode: str | None = None,
        top_k: int = DEFAULT_TOP_K,
        model: str | None = None,
        fusion: FusionSetting | None = None,
        query_instruction: str | None = None,
        bm25_threads: int | None = None,
        trust: Trust | None = None,
        nprobe: int | None = None,
        ef_search: int | None = None,
        min_score: float | None = None,
    ) -> None:
        """Open the index for MODE (None: hybrid when it has dense and BM25 parts, else its one mode).

        :param top_k: Hits per query, 1 to 10,000 (checked here, before anything loads).
        :param fusion: The fusion parameters to search with (``needle_retrieval.pipelines.fusion``, ``--fusion
            FILE|default``); None: the index's own (DIR/fusion.json when `needle tune` wrote one, else the
            defaults), read once here.
        :param query_instruction: The text the query embedder puts before every query, in place of the one the
            index recorded (``needle index --config`` with UltraRAG's ``query_instruction``), never on top of it;
            ``""``: none; None: the recorded one. Modes without an embedder (bm25) ignore it.
        :param bm25_threads: Threads the BM25 retriever scores a batch of queries with (its ``n_threads``, >= 1);
            None: its own (every core). Modes without bm25s (dense, and a Milvus index) ignore it.
        :param trust: The models whose code, the servers and the key variables the index's pipeline may use
            (``needle_retrieval.index.trust``); None: those the ``NEEDLE_*`` environment variables allow. What the
            index records must be among them, or it is refused before anything loads.
        :param nprobe: Lists an IVF index (ivf-flat, ivf-sq8, ivf-pq) searches per query, in place of the recorded
            number; more = better recall, slower. None: the index's own. Refused for an index of another type.
        :param ef_search: Candidates an HNSW index (hnsw, hnsw-sq8) keeps per query, in place of the recorded
            number. None: the index's own. Refused for an index of another type.
        :param min_score: Drop the hits scoring below it from every answer (fewer than ``top_k`` may come back):
            the final score of the mode, so the fused one in hybrid and rrf mode; its scale is the mode's (see
            docs/guides/score-threshold.md). None: keep every hit. A finite number, checked here.
        """
        self.index_dir = Path(index_dir)
        self.fusion = index_fusion(self.index_dir) if fusion is None else fusion
        self.top_k = check_top_k(top_k)
        self.min_score = check_score_threshold(min_score, "min_score")
        self.query_instruction = query_instruction
        self.bm25_threads = bm25_threads
        self.trust = trust
        self.search_time = (nprobe, ef_search)
        for attempt in (1, 2):
            self.manifest = IndexManifest.load(self.index_dir)
            try:
                self._open(mode, model)
                return
            except (NeedleError, DocumentStoreError, OSError):
                if hasattr(self, "pipeline"):
                    self.close()  # what was opened of this generation (a Lite database stays locked otherwise)
                if attempt == 2 or live_name(self.index_dir) == self.manifest.generation:
                    raise

    def _open(self, mode: str | None, model: str | None) -> None:
        """Check mode and model, build the pipeline, load the stores (checking their counts), then the model."""
        self.mode = mode or best_mode(self.manifest)
        if self.mode not in MODES:
            raise NeedleError(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if self.manifest.multimodal:  # an image index answers dense text queries only (needle_retrieval.index.images)
            from needle_retrieval.index.images import check_image_mode

            check_image_mode(self.manifest, self.mode, self.index_dir)
        check_mode(self.manifest, self.mode, self.index_dir)
        check_model(self.manifest, model, self.index_dir)
        template = self.manifest.template(self.mode, batch=True)
        data = fill_search_pipeline(self.index_dir, self.manifest, template, self.fusion, self.trust)
        if self.bm25_threads is not None:
            set_bm25_threads(data, self.bm25_threads)
        if self.search_time != (None, None):
            set_search_time(data, self.manifest, *self.search_time)
        if self.min_score is not None:
            set_min_score(data, self.min_score)
        self.runner = pf.QueryPipeline(data, f"{template}_search", "queries", warm_up=False)
        self.pipeline = self.runner.pipeline
        self._check_parts()
        self.pipeline.warm_up()
        if "embedder" in data["components"]:
            self._check_dimension()

    def _check_parts(self) -> None:
        """Load every document store now and compare its count with the manifest's, naming the part that differs.

        Loading first pins the generation (its files stay readable once open), and a missing or damaged part
        is an error here rather than an empty answer later.
        """
        for name, component in self.pipeline.walk():
            store = getattr(component, "document_store", None)
            if store is None:
                continue
            count = store.count_documents()
            if count != self.manifest.documents:
                raise NeedleError(
                    f"index {self.index_dir} is damaged: generation {self.manifest.generation} lists "
                    f"{self.manifest.documents} documents but the store of `{name}` holds {count}; "
                    f"{rebuild_hint(self.index_dir)}"
                )

    def _check_dimension(self) -> None:
        """Embed a probe query with the instruction of the searches and compare its size with the index's, before
        any real search (a bad instruction is refused here too)."""
        embedder = self.pipeline.get_component("embedder")
        dim = len(embedder.run(texts=["dimension probe"], query_instruction=self.query_instruction)["embeddings"][0])
        if dim != self.manifest.dim:
            raise NeedleError(
                f"index {self.index_dir} holds {self.manifest.dim}-dimensional vectors but model "
                f"{self.manifest.model} gives {dim}: rebuild the index with `needle index`"
            )

    def search(self, queries: list[str]) -> list[list[Document]]:
        """Top-k documents for each query, in query order; every query must pass ``components.checks``."""
        check_queries(queries)
        return self.runner.run(queries, self.top_k, self.query_instruction)

    def close(self) -> None:
        """Close the Milvus connections of a Milvus index, so that its Lite database is free for other processes
        (and for this one at another path, after a move). FAISS and BM25 stores hold no lock: nothing to do."""
        if self.manifest.store == "milvus":
            from needle_retrieval.index.milvus import close_stores

            close_stores(self.pipeline)
