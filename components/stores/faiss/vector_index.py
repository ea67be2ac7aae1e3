"""FAISS vectors keyed by int64 row numbers: build from a factory string, train, add, delete, search.

Ids: every index except IVF is wrapped in ``IndexIDMap2``, so that rows are FAISS ids and deletes work.
IVF indexes keep their own ids instead: ``IndexIDMap2.remove_ids`` assumes the wrapped index renumbers its
vectors after a delete, which IVF does not, and the id map then silently points at the wrong vectors
(checked with faiss 1.15). Indexes that cannot delete at all (HNSW) get tombstones: deleted rows stay in
FAISS, every search excludes them with an ``IDSelector``, and the store rebuilds the index once they
outnumber the live vectors.

HNSW settings travel in ``search_params``: ``efSearch`` (candidates per query) and ``efConstruction``
(candidates while inserting, so it shapes the graph of every vector added after it is set); IVF's ``nprobe`` (lists
scanned per query) too. FAISS saves them in ``vectors.faiss``, so a loaded index searches as it was built to,
unless ``search_params`` overrides them: they are search-time settings, changed without a rebuild.

Compressed indexes (``SQ8``, ``HNSW32,SQ8``, ``IVF1024,PQ64``) are built, trained and searched like the others;
their ids are checked on load as an id map's are: an IVF index keeps its own ids in its lists, so ``read`` reads
them there, and a tampered index naming a row the store never handed out is refused before any search.

Scores are "higher is better": inner product, cosine similarity (vectors and queries are L2-normalised
copies) or, for ``l2``, the negated squared Euclidean distance.
"""

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

import faiss
import numpy as np
from haystack.document_stores.errors import DocumentStoreError

from components.stores.crash_safe_generations import verified
from components.stores.faiss.capacity import reserve_codes
from components.stores.faiss.index_probes import can_remove, gpus_available, hnsw_of, ivf_ids
from components.stores.faiss.saved_files import (
    check_index,
    check_rows,
    first_line,
    load_tombstones,
    read_index,
    write_index,
)

logger = logging.getLogger(__name__)

METRICS = ("inner_product", "cosine", "l2")
VECTORS_FILE = "vectors.faiss"
TOMBSTONES_FILE = "tombstones.npy"


def build_faiss_index(dim: int, metric: str, factory: str, search_params: dict[str, float] | None) -> faiss.Index:
    """Build an empty index from a factory string, wrapped in IndexIDMap2 unless it is an IVF index."""
    metric_type = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    inner = faiss.index_factory(dim, factory, metric_type)
    if faiss.try_extract_index_ivf(inner) is None:
        id_map = faiss.IndexIDMap2(inner)
        id_map.own_fields = True
        inner.this.disown()  # type: ignore[attr-defined]  # faiss stubs lack SWIG's `this` ownership proxy
        index: faiss.Index = id_map
    else:
        index = inner
    for name, value in (search_params or {}).items():
        faiss.ParameterSpace().set_index_parameter(index, name, value)
    return index


def keeps_exact_vectors(factory: str, metric: str) -> bool:
    """Whether an index of FACTORY under METRIC holds each vector exactly as written, by row, so that the document
    table need not (``IN_INDEX``): a Flat index, not normalised for cosine."""
    return factory.strip() == "Flat" and metric != "cosine"


def exact_search(
    queries: np.ndarray, k: int, rows: np.ndarray, vectors: np.ndarray, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top-k over ``vectors`` (whose ids are ``rows``); same scores and -1 padding as ``search``."""
    scorer = faiss.IndexFlat(vectors.shape[1], faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT)
    scorer.add(prepare(vectors, metric))
    distances, positions = scorer.search(prepare(queries, metric), min(k, len(rows)))
    found = np.where(positions >= 0, rows[np.maximum(positions, 0)], -1)
    return (-distances if metric == "l2" else distances), found


def prepare(vectors: np.ndarray, metric: str) -> np.ndarray:
    """C-contiguous float32 vectors for FAISS; an L2-normalised copy for cosine (the input is never changed)."""
    prepared = np.array(vectors, dtype=np.float32, order="C", copy=metric == "cosine" or None)
    if metric == "cosine":
        faiss.normalize_L2(prepared)
    return prepared


class FAISSVectorIndex:
    """One FAISS index plus what the store needs around it: chunked adds, deletes, selectors, GPU replica."""

    def __init__(self, index: faiss.Index, metric: str, chunk_size: int, use_gpu: bool, tombstones: np.ndarray) -> None:
        self._index = index
        self.metric = metric
        self._chunk_size = chunk_size
        self._tombstones: set[int] = set(tombstones.tolist())
        self._tombstone_selector: tuple[faiss.IDSelector, ...] | None = None
        self._ivf = faiss.try_extract_index_ivf(index)
        self._hnsw = hnsw_of(index)
        self._removable = can_remove(index)
        self.exact_flat = _is_exact_flat(index, metric)
        """Whether the index is an exact Flat index of its metric's kind under an id map: one that gives back each
        vector exactly (what the rows a document table stores ``IN_INDEX`` need: a tampered file may hold any index
        under the map), and a Flat index of some of its vectors (a tenant's: ``tenant_rows``) scores them as this one
        does with a selector of their rows. Fixed with the index, so asked once."""
        self._takes_selector = True  # until FAISS refuses search parameters for this index type
        self._use_gpu = use_gpu and gpus_available()
        self._gpu_index: faiss.Index | None = None

    @property
    def dim(self) -> int:
        return self._index.d

    @property
    def is_trained(self) -> bool:
        return bool(self._index.is_trained)

    @property
    def ntotal(self) -> int:
        """Vectors physically in FAISS, tombstones included."""
        return self._index.ntotal

    @property
    def live_count(self) -> int:
        """Vectors in FAISS that belong to stored documents (tombstones excluded)."""
        return self._index.ntotal - len(self._tombstones)

    @property
    def needs_rebuild(self) -> bool:
        """True once tombstones outnumber live vectors: searching them costs more than a rebuild."""
        return len(self._tombstones) > max(self.live_count, 1000)

    def train(self, vectors: np.ndarray) -> bool:
        """Train the index on ``vectors``; False (index left untrained) when FAISS needs more points."""
        if self.is_trained:
            return True
        if self._ivf is not None and len(vectors) < self._ivf.nlist:
            return False
        try:
            self._index.train(prepare(vectors, self.metric))
        except RuntimeError as exc:
            if "training points" not in str(exc):
                raise
            return False
        self._gpu_index = None
        return True

    def reserve(self, count: int) -> None:
        """Room for COUNT more vectors, allocated once (``capacity``), so that the adds of a bulk write copy their
        vectors in instead of growing the index again and again."""
        reserve_codes(self._index, count)

    def add(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors under their row ids, ``chunk_size`` at a time (bounds the float32 copies in memory)."""
        for start in range(0, len(rows), self._chunk_size):
            end = start + self._chunk_size
            self._index.add_with_ids(prepare(vectors[start:end], self.metric), rows[start:end])
        self._gpu_index = None

    def remove(self, rows: list[int]) -> None:
        """Delete vectors by row; tombstones where the index type cannot delete."""
        if not rows:
            return
        if self._removable:
            self._index.remove_ids(faiss.IDSelectorBatch(np.asarray(rows, dtype=np.int64)))
        else:
            self._tombstones.update(rows)
            self._tombstone_selector = None
        self._gpu_index = None

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """
        One FAISS call for all queries: (Q, k) scores and rows, row -1 where fewer than k were found.

        :param allowed: rows the results must come from (a metadata filter), applied inside FAISS with an
            IDSelector so that a selective filter still yields top_k hits; None for all live rows.
            Index types that take no IDSelector (e.g. PQ) return no hits here: the caller's exact re-search of
            short results then answers from the stored vectors.
        """
        queries = prepare(queries, self.metric)
        keepalive = self._selector(allowed)
        if keepalive is None:
            distances, rows = self._search_index().search(queries, k)
        elif not self._takes_selector:
            return np.full((len(queries), k), -np.inf, np.float32), np.full((len(queries), k), -1, np.int64)
        else:
            try:
                distances, rows = self._index.search(queries, k, params=self._parameters(keepalive[0]))
            except RuntimeError:
                self._takes_selector = False
                return self.search(queries, k, allowed)
        return (-distances if self.metric == "l2" else distances), rows

    def _selector(self, allowed: np.ndarray | None) -> tuple[faiss.IDSelector, ...] | None:
        """An IDSelector (first item) and the objects it points into, which must outlive the search."""
        if allowed is not None:
            return (faiss.IDSelectorBatch(allowed),)
        if not self._tombstones:
            return None
        if self._tombstone_selector is None:
            dead = faiss.IDSelectorBatch(np.fromiter(self._tombstones, dtype=np.int64))
            self._tombstone_selector = (faiss.IDSelectorNot(dead), dead)
        return self._tombstone_selector

    def _parameters(self, selector: faiss.IDSelector) -> faiss.SearchParameters:
        """Search parameters of the index's own type, carrying over its nprobe / efSearch settings."""
        # Attributes are set one by one: faiss's stubs declare no keyword __init__ for search parameters.
        # The selector is kept alive by the caller's keepalive tuple for the duration of the search.
        params: faiss.SearchParameters
        if self._ivf is not None:
            ivf_params = faiss.SearchParametersIVF()
            ivf_params.nprobe = self._ivf.nprobe
            ivf_params.max_codes = self._ivf.max_codes
            params = ivf_params
        elif self._hnsw is not None:
            hnsw_params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # faiss stubs lack SearchParametersHNSW
            hnsw_params.efSearch = self._hnsw.hnsw.efSearch
            params = hnsw_params
        else:
            params = faiss.SearchParameters()
        params.sel = selector
        return params

    def _search_index(self) -> faiss.Index:
        """The GPU replica when GPUs are in use (rebuilt lazily after writes), else the CPU index."""
        if not self._use_gpu:
            return self._index
        if self._gpu_index is None:
            try:
                options = faiss.GpuMultipleClonerOptions()
                options.shard = True
                options.useFloat16 = True
                self._gpu_index = faiss.index_cpu_to_all_gpus(self._index, co=options)
            except (RuntimeError, AttributeError) as exc:
                logger.warning("index_use_gpu: cannot copy this index to the GPUs (%s); searching on CPU", exc)
                self._use_gpu = False
                return self._index
        return self._gpu_index

    def rows(self) -> np.ndarray:
        """The rows the index holds a vector of (tombstoned ones included), ascending, as int64."""
        if isinstance(self._index, faiss.IndexIDMap2):
            return np.sort(faiss.vector_to_array(self._index.id_map))
        return np.sort(ivf_ids(self._ivf)) if self._ivf is not None else np.empty(0, np.int64)

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """The vectors stored under ROWS (int64, each in the index), as a float32 (len(rows), dim) matrix.

        :raises DocumentStoreError: FAISS cannot give them back (a damaged index), naming what it said.
        """
        try:
            return self._index.reconstruct_batch(np.ascontiguousarray(rows, dtype=np.int64))
        except RuntimeError as exc:
            raise DocumentStoreError(f"the FAISS index cannot give back stored vectors: {first_line(exc)}") from None

    def write(self, directory: Path) -> None:
        """Write the index and its tombstones into ``directory``.

        :raises DocumentStoreError: naming the index file when FAISS cannot write it (a full disk).
        """
        write_index(self._index, directory / VECTORS_FILE)
        np.save(directory / TOMBSTONES_FILE, np.array(sorted(self._tombstones), dtype=np.int64))

    @classmethod
    def read(
        cls,
        directory: Path,
        manifest: Mapping[str, Any],
        metric: str,
        chunk_size: int,
        use_gpu: bool,
        params: dict[str, Any] | None,
    ) -> Self:
        """Read what ``write`` wrote into a saved generation, each file verified against its ``manifest`` (sha256)
        and checked (``saved_files``) before FAISS uses it; raises DocumentStoreError naming the file at fault."""
        path = verified(directory, manifest, VECTORS_FILE)
        index = read_index(path)
        check_index(index, path, metric, manifest)
        ivf = faiss.try_extract_index_ivf(index)
        if ivf is not None:
            check_rows(ivf_ids(ivf), path, manifest["next_row"], "ids")
        tombstones = load_tombstones(verified(directory, manifest, TOMBSTONES_FILE), manifest, index.ntotal)
        for name, value in (params or {}).items():
            faiss.ParameterSpace().set_index_parameter(index, name, value)
        return cls(index, metric, chunk_size, use_gpu, tombstones)


def _is_exact_flat(index: faiss.Index, metric: str) -> bool:
    """``FAISSVectorIndex.exact_flat`` of INDEX under METRIC. ``faiss.index_factory("Flat")`` makes the base
    ``IndexFlat`` (a store built in this process), a reloaded file an ``IndexFlatIP``/``IndexFlatL2``: all are
    ``IndexFlat``."""
    inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexIDMap2) else None
    wanted = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    return isinstance(inner, faiss.IndexFlat) and inner.metric_type == wanted
