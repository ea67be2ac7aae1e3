"""`needle eval`: run a BEIR split through a real retrieval pipeline and score it.

Two ways to choose the retrieval:
- ``--mode dense|bm25|hybrid|rrf`` builds (or reuses) an index directory of the dataset's corpus with
  ``needle index`` and searches it with the same pipelines as ``needle search``. The live index is searched
  as it is while its manifest records the same corpus content, model and parts (``needle_retrieval.eval.index_reuse``);
  otherwise a new generation is built, carrying over the corpus embeddings while model, prompt and corpus
  content stay the same.
  ``--store milvus`` builds a Milvus Lite index instead (its own directory, seeded with the FAISS index's
  embeddings of the same corpus when there are any), so both stores are scored on the same vectors.
- ``--pipeline FILE.yaml`` runs any YAML pipeline that declares a ``query`` input and a ``documents``
  output in Hayhooks' ``inputs:`` / ``outputs:`` blocks, one query at a time.

A fused mode (hybrid, and rrf over FAISS + bm25s) searches with one fusion setting
(``needle_retrieval.pipelines.fusion``), which the result records (``fusion``) and the table shows: the index's own
(DIR/fusion.json when `needle tune` wrote one, else the defaults), or ``fusion`` (``--fusion FILE|default``) for this
run only, the index left as it is.
"""

import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from haystack import Document

from needle_retrieval.defaults import RUN_DEPTH
from needle_retrieval.errors import NeedleError
from needle_retrieval.eval import EvalResult, evaluate_run, load_beir, run_from_rankings
from needle_retrieval.eval.index_reuse import OpenedIndex, open_for_eval
from needle_retrieval.eval.timing import LATENCY_SAMPLE, Retrieve, check_latency_queries, time_searches
from needle_retrieval.index.generations import embeddings_file
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.fusion import FusionSetting, index_fusion
from needle_retrieval.search.runs import Ranking, check_output, run_label, write_run
from needle_retrieval.yaml_data import load_yaml

__all__ = ["RUN_DEPTH", "default_index_dir", "evaluate"]

CACHE_ROOT = Path.home() / ".cache" / "needle" / "eval"


def default_index_dir(corpus: Path, store: str = "faiss") -> Path:
    """Where eval keeps the index of a corpus: one directory per corpus path and store, under ~/.cache/needle/eval."""
    key = hashlib.sha1(str(corpus.resolve()).encode()).hexdigest()[:10]
    return CACHE_ROOT / f"{corpus.parent.name}-{key}{'' if store == 'faiss' else '-' + store}"


def pipeline_retriever(path: Path) -> Retrieve:
    """Wrap a YAML pipeline with a `query` input and a `documents` output as a retrieve function."""
    try:
        data = load_yaml(path.read_text(encoding="utf-8")) or {}
    except OSError as e:
        raise NeedleError(f"cannot read pipeline {path}: {e.strerror}") from e
    except (UnicodeDecodeError, ValueError) as e:
        raise NeedleError(f"cannot read pipeline {path}: {e}") from None
    return pf.QueryPipeline(data, str(path)).run_many


@dataclass
class Retrieval:
    """What one evaluation searches with, and what getting it ready cost (``needle_retrieval.eval.timing``)."""

    retrieve: Retrieve
    label: str
    params: dict[str, int | str | None]
    model_load_seconds: float
    opened: OpenedIndex | None = None  # --mode: the index searched; None for a --pipeline file
    fusion: FusionSetting | None = None  # what a fused mode searched with; None when nothing is fused

    def close(self) -> None:
        """Release the index (a Milvus Lite database stays locked otherwise)."""
        if self.opened is not None:
            self.opened.searcher.close()


def pipeline_retrieval(pipeline: Path, store: str, fusion: FusionSetting | None) -> Retrieval:
    """Load a --pipeline file (the time it takes is its model loading)."""
    if store != "faiss":
        raise NeedleError(f"--store {store} applies to --mode; a --pipeline file names its own document stores")
    if fusion is not None:
        raise NeedleError("--fusion applies to --mode; a --pipeline file names its own fusion parameters")
    start = time.perf_counter()
    retrieve = pipeline_retriever(pipeline)
    took = time.perf_counter() - start
    return Retrieval(retrieve, pipeline.stem, {"depth": RUN_DEPTH, "pipeline": str(pipeline)}, took)


def fuses(mode: str, store: str) -> bool:
    """Whether MODE over STORE runs a fusion the setting tunes: the mix curve (hybrid) or RRFBatchJoiner's k
    (rrf over FAISS + bm25s; over Milvus, rrf is Milvus's own RRF, which no setting changes)."""
    return mode == "hybrid" or (mode == "rrf" and store == "faiss")


def index_retrieval(
    corpus: Path, mode: str, store: str, model: str, index_dir: Path | None, fusion: FusionSetting | None
) -> Retrieval:
    """Reuse or build the index of CORPUS for MODE (``needle_retrieval.eval.index_reuse``) and open its searcher with
    FUSION (None: the index's own)."""
    index_dir = index_dir or default_index_dir(corpus, store)
    seed = embeddings_file(default_index_dir(corpus)) if store != "faiss" else None
    opened = open_for_eval(corpus, index_dir, mode, model, RUN_DEPTH, store, seed, fusion)
    embedded = mode != "bm25" or store != "faiss"
    params: dict[str, int | str | None] = {"depth": RUN_DEPTH, "model": model if embedded else None}
    params.update(index_dir=str(index_dir), store=store)
    label = run_label(mode, store)
    used = (fusion or index_fusion(index_dir)) if fuses(mode, store) else None
    return Retrieval(opened.searcher.search, label, params, opened.model_load_seconds, opened, used)


def evaluate(
    dataset_dir: Path,
    *,
    split: str = "test",
    mode: str = "dense",
    store: str = "faiss",
    pipeline: Path | None = None,
    model: str,
    index_dir: Path | None = None,
    name: str | None = None,
    run_file: Path | None = None,
    fusion: FusionSetting | None = None,
    latency_queries: int | None = None,
) -> EvalResult:
    """Evaluate one retrieval setup on a BEIR split and return its scored result.

    The searches are timed apart from building the index and loading the models (``needle_retrieval.eval.timing``);
    the rankings scored are those of the batched throughput pass, and at most LATENCY_QUERIES queries are then
    timed alone (0: none; None: ``LATENCY_SAMPLE``). FUSION (``needle_retrieval.pipelines.fusion.fusion_option``)
    replaces the index's own fusion setting for this run; the result records the one searched with. RUN_FILE receives
    the scored rankings as a TREC run with their retrieval scores (``needle_retrieval.search.runs``, the writer of
    `needle search
    --queries`).
    """
    latency = check_latency_queries(LATENCY_SAMPLE if latency_queries is None else latency_queries)
    if run_file is not None:
        check_output(run_file, "--run-file")
    dataset = load_beir(dataset_dir, split)
    if pipeline is not None:
        retrieval = pipeline_retrieval(pipeline, store, fusion)
    else:
        retrieval = index_retrieval(dataset.corpus_path, mode, store, model, index_dir, fusion)
    kept = None if run_file is None else KeptAnswers(retrieval.retrieve)
    try:
        rankings, timings = time_searches(kept or retrieval.retrieve, dataset.queries, retrieval.label, latency)
    finally:
        retrieval.close()
    opened = retrieval.opened
    result = EvalResult.from_scores(
        evaluate_run(run_from_rankings(rankings), dataset.qrels),
        name=name or retrieval.label,
        dataset=dataset.name,
        split=split,
        mode=retrieval.label if pipeline else mode,
        queries_per_second=timings.queries_per_second,
        index_build_seconds=None if opened is None else opened.build_seconds,
        embedding_cache_hit=None if opened is None else opened.embedding_cache_hit,
        params=retrieval.params,
        index_reused=None if opened is None else opened.reused,
        model_load_seconds=retrieval.model_load_seconds,
        timings=timings,
        fusion=None if retrieval.fusion is None else retrieval.fusion.record(),
    )
    if kept is not None and run_file is not None:
        write_run_file(run_file, kept.scored(rankings, dataset.queries), retrieval.label)
    return result


def write_run_file(run_file: Path, scored: dict[str, Ranking], label: str) -> None:
    """Write ``--run-file``; a run that TREC's format cannot hold (a document id with whitespace, a pipeline whose
    hits have no score) is a warning on stderr, never the loss of the evaluation it comes after."""
    try:
        write_run(run_file, scored.items(), "trec", label)
    except NeedleError as error:
        print(f"needle: warning: --run-file {run_file} not written: {error}", file=sys.stderr)


class KeptAnswers:
    """A retrieve function that keeps the (doc id, score) lists it answered, by query text, so that the run file
    holds the retrieval scores of exactly the rankings scored (``scored``).

    ``time_searches`` hands back doc ids only, and asks the same text more than once (a warm-up, the batch pass,
    the latency pass); every answer is kept, and ``scored`` picks for each query the one whose ids are its ranking.
    """

    def __init__(self, retrieve: Retrieve) -> None:
        self.retrieve = retrieve
        self.answers: dict[str, list[Ranking]] = {}

    def __call__(self, texts: list[str]) -> list[list[Document]]:
        """Answer TEXTS through the wrapped retrieve function, keeping every answer's ids and scores."""
        results = self.retrieve(texts)
        for text, docs in zip(texts, results, strict=True):
            self.answers.setdefault(text, []).append([(d.id, d.score) for d in docs])
        return results

    def scored(self, rankings: dict[str, list[str]], queries: dict[str, str]) -> dict[str, Ranking]:
        """Each query's ranking (doc ids) with the scores it was returned with."""
        return {qid: self._match(queries[qid], ids) for qid, ids in rankings.items()}

    def _match(self, text: str, ids: list[str]) -> Ranking:
        """The kept answer to TEXT whose doc ids are IDS, in order."""
        return next(answer for answer in self.answers[text] if [doc_id for doc_id, _ in answer] == ids)
