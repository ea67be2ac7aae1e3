"""The saved generations of a BM25 store directory, and loaders that name the file that is wrong.

Layout of a store directory (the seed's ``save_path``), written crash-safely by
``components.stores.crash_safe_generations``::

    <path>/CURRENT                 one line: the live generation, e.g. "gen-000003"
    <path>/gen-000003/manifest.json     format, tokenizer and BM25 settings, document source, file sizes
    <path>/gen-000003/*.index.npy, vocab.index.json, params.index.json   the bm25s index (memory-mappable)
    <path>/gen-000003/ids.json, tokens.npy, token_offsets.npy          row ids and term ids (for compaction)
    <path>/gen-000003/documents.jsonl, documents.offsets.npy           the documents, unless shared
"""

from pathlib import Path

import numpy as np
from haystack.document_stores.errors import DocumentStoreError

from components.stores.crash_safe_generations import MANIFEST, Generations, load_json

__all__ = ["GENERATIONS", "MANIFEST", "load_array", "load_json"]

GENERATIONS = Generations(kind="BM25 index", digits=6, stamp={"format": "needle-bm25", "format_version": 1})


def load_array(path: Path, dtype_kind: str, mmap: bool = True) -> np.ndarray:
    """Open a 1-D ``.npy`` array of the given kind ('i' integer, 'f' float), memory-mapped by default."""
    try:
        array: np.ndarray = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError as exc:
        raise DocumentStoreError(f"{path}: missing") from exc
    except (ValueError, OSError, EOFError) as exc:
        raise DocumentStoreError(f"{path}: corrupted .npy file ({exc})") from exc
    if array.ndim != 1 or array.dtype.kind != dtype_kind:
        raise DocumentStoreError(
            f"{path}: corrupted, expected a 1-D array of kind {dtype_kind!r}, got {array.dtype} {array.shape}"
        )
    return array
