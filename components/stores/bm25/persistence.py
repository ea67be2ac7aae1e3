"""The saved generations of a BM25 store directory, and loaders that name the file that is wrong.

Layout of a store directory (the seed's ``save_path``), written crash-safely by
``components.stores.crash_safe_generations``::

    <path>/CURRENT                 one line: the live generation, e.g. "gen-000003"
    <path>/gen-000003/manifest.json     format, tokenizer and BM25 settings, document source, file sizes
                                        and sha256 (checked as each file is loaded: ``segment_files``)
    <path>/gen-000003/*.index.npy, vocab.index.json, params.index.json   the bm25s index (read into memory)
    <path>/gen-000003/ids.json, tokens.npy, token_offsets.npy          row ids and term ids (for compaction)
    <path>/gen-000003/documents.jsonl, documents.offsets.npy           the documents, unless shared
"""

import os
from pathlib import Path

import numpy as np
from haystack.document_stores.errors import DocumentStoreError

from components.stores.crash_safe_generations import MANIFEST, Generations, load_json, verified
from components.stores.file_digests import open_regular

__all__ = ["GENERATIONS", "MANIFEST", "check_offsets", "check_range", "load_array", "load_json", "verified"]

GENERATIONS = Generations(kind="BM25 index", digits=6, stamp={"format": "needle-bm25", "format_version": 1})


def load_array(path: Path, dtype: str, length: int | None = None) -> np.ndarray:
    """
    Read a 1-D ``.npy`` array of exactly ``dtype`` (e.g. ``"int32"``) and, if given, ``length`` into memory of
    its own, read-only; never through pickle, never through a link. The caller checks the values' range before any
    kernel indexes with them, and the check stays true: the file may change afterwards, the array does not.

    Read, not memory-mapped: a mapping shows whatever is later written to the file (in place, or through a hard
    link `needle tune` made: the same file), so a kernel indexing with checked values would read far out of
    bounds (SIGSEGV), and one reading past the end of a truncated file dies of SIGBUS. A private mapping is no
    better (another process' writes still show until a page is copied). The copy costs a memcpy from the page
    cache that the digest check has just filled: ``benchmarks/bench_bm25_array_loading.py`` measures it.

    :raises DocumentStoreError: naming the file when it is missing, a link, not a regular file, not an ``.npy``
        array, or of another dtype or shape than the index writes.
    """
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            array: np.ndarray = np.load(handle, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DocumentStoreError(f"{path}: corrupted .npy file ({str(exc)[:120]})") from exc
    if array.ndim != 1 or array.dtype != np.dtype(dtype) or (length is not None and len(array) != length):
        wanted = f"{length} values" if length is not None else "values"
        raise DocumentStoreError(
            f"{path}: corrupted, expected a 1-D array of {wanted} of type {dtype}, got {array.dtype} {array.shape}"
        )
    array.flags.writeable = False
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
