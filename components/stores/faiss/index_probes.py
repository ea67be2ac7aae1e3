"""What a FAISS index is and can do, asked of FAISS itself: its HNSW graph, its IVF ids, whether it deletes, GPUs.

``FAISSVectorIndex`` asks these once, when it wraps an index (and ``read`` asks an IVF index its ids to check them),
so its own file keeps to the index's life cycle: add, delete, search, write.
"""

import logging

import faiss
import numpy as np

logger = logging.getLogger(__name__)


def hnsw_of(index: faiss.Index) -> faiss.IndexHNSW | None:
    """The HNSW index INDEX is (or wraps under its id map), whose ``efSearch`` a filtered search carries over; None."""
    inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexIDMap2) else index
    return inner if isinstance(inner, faiss.IndexHNSW) else None


def ivf_ids(ivf: faiss.IndexIVF) -> np.ndarray:
    """Every id an IVF index holds, list by list (IVF keeps its ids in its inverted lists, not in an id map)."""
    lists = ivf.invlists
    if lists is None:
        return np.empty(0, np.int64)
    found = []
    for number in range(ivf.nlist):
        size = lists.list_size(number)
        if size:
            ids = lists.get_ids(number)
            found.append(faiss.rev_swig_ptr(ids, size).copy())
            lists.release_ids(number, ids)  # type: ignore[attr-defined]  # faiss stubs lack release_ids
    return np.concatenate(found) if found else np.empty(0, np.int64)


def can_remove(index: faiss.Index) -> bool:
    """Whether FAISS can delete from this index type (probed with an empty delete)."""
    try:
        index.remove_ids(faiss.IDSelectorBatch(np.empty(0, dtype=np.int64)))
    except RuntimeError:
        return False
    return True


def gpus_available() -> bool:
    """True when faiss was built with GPU support and sees a GPU; logs a warning (CPU fallback) otherwise."""
    count = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if count > 0 and hasattr(faiss, "GpuMultipleClonerOptions"):
        return True
    logger.warning("index_use_gpu=True but faiss sees no GPU (faiss-gpu not installed or no device); using the CPU")
    return False
