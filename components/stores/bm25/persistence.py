"""The saved generations of a BM25 store directory, and loaders that name the file that is wrong.

Layout of a store directory (the seed's ``save_path``), written crash-safely by
``components.stores.crash_safe_generations``::

    <path>/CURRENT                 one line: the live generation, e.g. "gen-000003"
    <path>/gen-000003/manifest.json     format, tokenizer and BM25 settings, document source, file sizes
                                        and sha256 (checked as each file is loaded: ``segment_files``)
    <path>/gen-000003/*.index.npy, vocab.index.json, params.index.json   the bm25s index (memory-mappable)
    <path>/gen-000003/ids.json, tokens.npy, token_offsets.npy          row ids and term ids (for compaction)
    <path>/gen-000003/documents.jsonl, documents.offsets.npy           the documents, unless shared
"""

from pathlib import Path

import numpy as np
from haystack.document_stores.errors import DocumentStoreError

from components.stores.crash_safe_generations import MANIFEST, Generations, load_json, verified

__all__ = ["GENERATIONS", "MANIFEST", "check_offsets", "check_range", "load_array", "load_json", "verified"]

GENERATIONS = Generations(kind="BM25 index", digits=6, stamp={"format": "needle-bm25", "format_version": 1})


def load_array(path: Path, dtype: str, mmap: bool = True, length: int | None = None) -> np.ndarray:
    """
    Open a 1-D ``.npy`` array of exactly ``dtype`` (e.g. ``"int32"``) and, if given, ``length``, memory-mapped by
    default; never through pickle. The caller checks the values' range before any kernel indexes with them.

    :raises DocumentStoreError: naming the file when it is missing, not an ``.npy`` array, or of another dtype or
        shape than the index writes.
    """
    try:
        array: np.ndarray = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError as exc:
        raise DocumentStoreError(f"{path}: missing") from exc
    except (ValueError, OSError, EOFError) as exc:
        raise DocumentStoreError(f"{path}: corrupted .npy file ({str(exc)[:120]})") from exc
    if array.ndim != 1 or array.dtype != np.dtype(dtype) or (length is not None and len(array) != length):
        wanted = f"{length} values" if length is not None else "values"
        raise DocumentStoreError(
            f"{path}: corrupted, expected a 1-D array of {wanted} of type {dtype}, got {array.dtype} {array.shape}"
        )
    return array


def check_offsets(array: np.ndarray, path: Path, end: int | None = None) -> None:
    """Offsets into a sequence: start at 0, never decrease and (if given) end at ``end``; else DocumentStoreError."""
    if len(array) == 0 or int(array[0]) != 0 or (len(array) > 1 and int(np.diff(array).min()) < 0):
        raise DocumentStoreError(f"{path}: corrupted, offsets must start at 0 and never decrease")
    if end is not None and int(array[-1]) != end:
        raise DocumentStoreError(f"{path}: corrupted, the offsets end at {int(array[-1])}, not at {end}")


def check_range(array: np.ndarray, path: Path, low: float, high: float) -> None:
    """Every value of ``array`` lies in [low, high) (NaN never does); else DocumentStoreError naming the file."""
    if len(array) and not (low <= array.min() and array.max() < high):
        found = f"{array.min()!s} to {array.max()!s}"
        raise DocumentStoreError(f"{path}: corrupted, values from {found} where the index holds [{low:g}, {high:g})")
