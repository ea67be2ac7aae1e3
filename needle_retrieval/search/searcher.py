"""Search an index directory through the YAML search pipelines, in dense, BM25, hybrid or rrf mode.

The index's manifest says which store holds it, so the same modes search FAISS + bm25s or one Milvus
collection (``IndexManifest.template`` picks the pipeline); nothing else changes for the caller. Every mode runs
its batch pipeline, all queries in one run (a single query too: one run costs the same pipeline overhead whatever
the number of queries), fed by the rule every entry point shares (``needle_retrieval.pipelines.feed``): ``top_k`` and
the query instruction go in at run time. It opens the index as every entry point does, checks included
(``needle_retrieval.search.opening.open_search``). A minimum score (``min_score``, `needle search --min-score`)
becomes the ``score_threshold`` of the component that answers (``set_min_score``): it applies to the final hits,
after fusion in hybrid and rrf mode.
"""

from pathlib import Path

from haystack import Document

from components.checks import check_queries, check_score_threshold, check_top_k
from components.stores.tenant_fields import tenant_value_problem
from needle_retrieval.defaults import DEFAULT_TOP_K
from needle_retrieval.index.trust import Trust
from needle_retrieval.pipelines.fusion import FusionSetting, index_fusion
from needle_retrieval.search.opening import (  # re-exported: they were first defined here
    BM25_RETRIEVERS,
    SearchKnobs,
    best_mode,
    check_mode,
    check_model,
    close_runner,
    open_search,
    set_bm25_threads,
    set_min_score,
)

__all__ = ["BM25_RETRIEVERS", "Searcher", "best_mode", "check_mode", "check_model", "set_bm25_threads", "set_min_score"]


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
        tenant: str | None = None,
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
        :param tenant: Search only the documents of this tenant: those whose tenant field, as the index recorded it
            (``needle index --tenant-field``, or a Milvus index's partition key), holds this string (a document whose
            field holds a number is no one's tenant here). None: every document. Checked here as ``--tenant`` is:
            a non-blank string without control characters, not starting like a date (YYYY-MM-DD).
        :raises ValueError: ``tenant`` is not such a string (one line saying why).
        """
        problem = tenant_value_problem(tenant) if tenant is not None else None
        if problem is not None:
            raise ValueError(f"tenant: {problem}")
        self.index_dir = Path(index_dir)
        self.fusion = index_fusion(self.index_dir) if fusion is None else fusion
        self.top_k = check_top_k(top_k)
        self.min_score = check_score_threshold(min_score, "min_score")
        self.query_instruction = query_instruction
        self.bm25_threads = bm25_threads
        self.trust = trust
        self.search_time = (nprobe, ef_search)
        knobs = SearchKnobs(self.fusion, trust, bm25_threads, nprobe, ef_search, self.min_score, tenant)
        opened = open_search(self.index_dir, mode, model=model, knobs=knobs, query_instruction=query_instruction)
        self.manifest = opened.manifest
        self.mode = opened.mode
        self.runner = opened.runner
        self.pipeline = opened.pipeline

    def search(self, queries: list[str]) -> list[list[Document]]:
        """Top-k documents for each query, in query order; every query must pass ``components.checks``."""
        check_queries(queries)
        hits: list[list[Document]] = self.runner.documents(queries, self.top_k, self.query_instruction)  # type: ignore[assignment]
        return hits

    def close(self) -> None:
        """Close the Milvus connections of a Milvus index, so that its Lite database is free for other processes
        (and for this one at another path, after a move). FAISS and BM25 stores hold no lock: nothing to do."""
        close_runner(self.manifest, self.pipeline)
