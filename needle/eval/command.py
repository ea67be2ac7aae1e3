"""`needle eval`: run a BEIR split through a real retrieval pipeline and score it.

Two ways to choose the retrieval:
- ``--mode dense|bm25|hybrid|rrf`` builds (or reuses) an index directory of the dataset's corpus with
  ``needle index`` and searches it with the same pipelines as ``needle search``; the corpus embeddings
  are cached in that directory and reused while model, prompt and corpus content stay the same.
  ``--store milvus`` builds a Milvus Lite index instead (its own directory, seeded with the FAISS index's
  embeddings of the same corpus when there are any), so both stores are scored on the same vectors.
- ``--pipeline FILE.yaml`` runs any YAML pipeline that declares a ``query`` input and a ``documents``
  output in Hayhooks' ``inputs:`` / ``outputs:`` blocks, one query at a time.
"""

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from haystack import Document
from tqdm import tqdm

from needle import pipeline_files as pf
from needle.eval import EvalResult, evaluate_run, load_beir, run_from_rankings
from needle.index_dir import IndexManifest, NeedleError
from needle.index_generations import embeddings_file
from needle.indexing import StoreChoice, build_index
from needle.search import Searcher

DEPTH = 100  # retrieve this many per query: Recall@100 and MAP@100 need them
BATCH = 64  # queries per pipeline run in batched modes (progress granularity)
CACHE_ROOT = Path.home() / ".cache" / "needle" / "eval"

Retrieve = Callable[[list[str]], list[list[Document]]]


def default_index_dir(corpus: Path, store: str = "faiss") -> Path:
    """Where eval keeps the index of a corpus: one directory per corpus path and store, under ~/.cache/needle/eval."""
    key = hashlib.sha1(str(corpus.resolve()).encode()).hexdigest()[:10]
    return CACHE_ROOT / f"{corpus.parent.name}-{key}{'' if store == 'faiss' else '-' + store}"


def index_for_eval(
    corpus: Path, index_dir: Path, mode: str, model: str, store: str = "faiss", seed: Path | None = None
) -> tuple[float, bool | None]:
    """Build or refresh the index for MODE; returns (build seconds, whether the embedding cache was hit).

    The cache was hit when the new generation's embedding file is the previous one (or ``seed``), carried over
    unchanged. A Milvus index always has its dense part: its BM25 and hybrid modes run over the one collection.
    A BM25 run keeps the dense part of an index that has one (its embeddings are carried over, not encoded), so
    that the next dense or hybrid run still finds them.
    """
    before = embedding_stamp(index_dir) or (file_stamp(seed) if seed is not None else None)
    kept = embedding_stamp(index_dir) is not None and live_model(index_dir) == model
    start = time.perf_counter()
    build_index(
        corpus,
        index_dir,
        model=model,
        overwrite=False,
        dense=mode != "bm25" or store == "milvus" or kept,
        bm25=mode != "dense",
        target=StoreChoice(store),
        seed=seed,
    )
    took = time.perf_counter() - start
    if mode == "bm25" and store == "faiss":
        return took, None
    return took, before is not None and before == embedding_stamp(index_dir)


def live_model(index_dir: Path) -> str | None:
    """The model of the index's live generation, or None when there is no readable index."""
    try:
        return IndexManifest.load(index_dir).model
    except NeedleError:
        return None


def embedding_stamp(index_dir: Path) -> tuple[int, int] | None:
    """Size and modification time of the live generation's embedding file, or None when it has none."""
    npy = embeddings_file(index_dir)
    return None if npy is None else file_stamp(npy)


def file_stamp(path: Path) -> tuple[int, int]:
    """Size and modification time of a file (a hard link carried into a new generation keeps both)."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def pipeline_retriever(path: Path) -> Retrieve:
    """Wrap a YAML pipeline with a `query` input and a `documents` output as a retrieve function."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as e:
        raise NeedleError(f"cannot read pipeline {path}: {e.strerror}") from e
    return pf.QueryPipeline(data, str(path)).run_many


def run_queries(retrieve: Retrieve, queries: dict[str, str], label: str) -> tuple[dict[str, list[str]], float]:
    """Run every query in batches with a progress bar; returns (rankings, queries per second)."""
    ids, texts = list(queries), list(queries.values())
    rankings: dict[str, list[str]] = {}
    start = time.perf_counter()
    with tqdm(total=len(ids), desc=f"searching ({label})", unit="q") as bar:
        for i in range(0, len(ids), BATCH):
            for qid, docs in zip(ids[i : i + BATCH], retrieve(texts[i : i + BATCH]), strict=True):
                rankings[qid] = [d.id for d in docs]
            bar.update(len(ids[i : i + BATCH]))
    return rankings, len(ids) / max(time.perf_counter() - start, 1e-9)


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
) -> EvalResult:
    """Evaluate one retrieval setup on a BEIR split and return its scored result."""
    dataset = load_beir(dataset_dir, split)
    build_s: float | None = None
    cache_hit: bool | None = None
    params: dict[str, int | str | None] = {"depth": DEPTH}
    searcher: Searcher | None = None
    if pipeline is not None:
        if store != "faiss":
            raise NeedleError(f"--store {store} applies to --mode; a --pipeline file names its own document stores")
        retrieve, label, params["pipeline"] = pipeline_retriever(pipeline), pipeline.stem, str(pipeline)
    else:
        index_dir = index_dir or default_index_dir(dataset.corpus_path, store)
        seed = embeddings_file(default_index_dir(dataset.corpus_path)) if store != "faiss" else None
        build_s, cache_hit = index_for_eval(dataset.corpus_path, index_dir, mode, model, store, seed)
        searcher = Searcher(index_dir, mode=mode, top_k=DEPTH)
        retrieve, label = searcher.search, mode if store == "faiss" else f"{store}-{mode}"
        embedded = mode != "bm25" or store != "faiss"
        params.update(model=model if embedded else None, index_dir=str(index_dir), store=store)
    try:
        rankings, qps = run_queries(retrieve, dataset.queries, label)
    finally:
        if searcher is not None:
            searcher.close()
    if run_file is not None:
        write_trec_run(rankings, run_file, label)
    scores = evaluate_run(run_from_rankings(rankings), dataset.qrels)
    return EvalResult.from_scores(
        scores,
        name=name or label,
        dataset=dataset.name,
        split=split,
        mode=label if pipeline else mode,
        queries_per_second=qps,
        index_build_seconds=build_s,
        embedding_cache_hit=cache_hit,
        params=params,
    )


def write_trec_run(rankings: dict[str, list[str]], path: Path, tag: str) -> None:
    """Write the run in TREC format (qid Q0 docid rank score tag), so any trec_eval tool can re-score it."""
    with path.open("w", encoding="utf-8") as f:
        for qid, doc_ids in rankings.items():
            for rank, doc_id in enumerate(doc_ids, 1):
                f.write(f"{qid} Q0 {doc_id} {rank} {len(doc_ids) - rank + 1} {tag}\n")
