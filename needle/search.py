"""Search an index directory through the YAML search pipelines, in dense, BM25 or hybrid mode."""

from pathlib import Path

from haystack import Document

from needle import pipeline_files as pf
from needle.index_dir import IndexManifest, NeedleError, fill_search_pipeline

MODES = ("dense", "bm25", "hybrid", "rrf")  # rrf: Haystack's DocumentJoiner fusion, for comparison
# Which pipeline answers a list of queries in each mode: batch pipelines take all queries in one run.
BATCH_PIPELINES = {"dense": "dense_batch", "bm25": "bm25_batch", "hybrid": "hybrid_batch"}


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


class Searcher:
    """Builds the search pipeline for one index and mode once, then answers batches of queries."""

    def __init__(self, index_dir: Path, mode: str | None = None, top_k: int = 5, model: str | None = None) -> None:
        self.index_dir = Path(index_dir)
        self.manifest = IndexManifest.load(self.index_dir)
        self.mode = mode or best_mode(self.manifest)
        if self.mode not in MODES:
            raise NeedleError(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")
        check_mode(self.manifest, self.mode, self.index_dir)
        check_model(self.manifest, model, self.index_dir)
        self.batched = self.mode in BATCH_PIPELINES
        template = BATCH_PIPELINES.get(self.mode, self.mode)
        data = fill_search_pipeline(self.index_dir, self.manifest, template, top_k)
        self.runner = pf.QueryPipeline(data, f"{template}_search", "queries" if self.batched else "query")
        self.pipeline = self.runner.pipeline
        if "embedder" in data["components"]:
            self._check_dimension()

    def _check_dimension(self) -> None:
        """Embed a probe query and compare its size with the index's, before any real search."""
        embedder = self.pipeline.get_component("embedder")
        out = embedder.run(texts=["dimension probe"]) if self.batched else embedder.run(text="dimension probe")
        dim = len(out["embeddings"][0] if self.batched else out["embedding"])
        if dim != self.manifest.dim:
            raise NeedleError(
                f"index {self.index_dir} holds {self.manifest.dim}-dimensional vectors but model "
                f"{self.manifest.model} gives {dim}: rebuild the index with `needle index`"
            )

    def search(self, queries: list[str]) -> list[list[Document]]:
        """Top-k documents for each query, in query order."""
        return self.runner.run_many(queries)
