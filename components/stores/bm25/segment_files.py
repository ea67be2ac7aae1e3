"""Opening a saved BM25 main segment: each file verified and checked before bm25s or a numba kernel sees it.

The numba kernels index arrays without bounds checks, so a saved value out of range is a crash (SIGSEGV), and
a weight that no BM25 formula gives is a wrong answer (scores of 9e30). Each file is therefore, in this order:

1. verified: its bytes have the sha256 the generation's manifest records; all files of the generation are
   hashed when it is opened, on parallel threads (``crash_safe_generations.verify_all``);
2. read into memory of its own, without pickle, of exactly the dtype and length the index writes (``load_array``:
   not memory-mapped, so a later change to the file, in place or through a hard link, never reaches a kernel);
3. checked for range: term ids and row numbers inside the vocabulary and the rows, offsets that start at 0 and
   never decrease, finite weights within what the recorded BM25 settings can give, ``params.index.json`` equal
   to the manifest's settings.

bm25s' own loader is not used: it passes ``params.index.json`` to the ``BM25`` constructor as it is. The object
is built as ``matrix.build_bm25`` builds it, from the manifest's checked settings and the checked arrays.
``tokens.npy`` (every row's term ids, only read by compactions and saves) is loaded and range-checked on first use.
"""

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.persistence import MANIFEST, check_offsets, check_range, load_array, load_json, verified
from components.stores.bm25.scoring import NONOCCURRENCE_METHODS
from components.stores.bm25.segments import BM25Params, MainSegment
from components.stores.crash_safe_generations import verify_all

DATA, INDICES, INDPTR = "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"
VOCAB, PARAMS, NONOCCURRENCE = "vocab.index.json", "params.index.json", "nonoccurrence_array.index.npy"
IDS, TOKENS, OFFSETS = "ids.json", "tokens.npy", "token_offsets.npy"


class SavedFiles:
    """The files of one saved generation, each verified against its manifest before it is read."""

    def __init__(self, directory: Path, manifest: Mapping[str, Any]) -> None:
        """:param manifest: the generation's manifest as ``Generations.read_manifest`` returned it."""
        self.directory = directory
        self.manifest = manifest

    def path(self, name: str) -> Path:
        """The verified path of file NAME."""
        return verified(self.directory, self.manifest, name)

    def array(self, name: str, dtype: str, length: int | None = None) -> np.ndarray:
        """File NAME as a read-only 1-D array of DTYPE (and LENGTH values, if given), read into memory."""
        return load_array(self.path(name), dtype, length=length)

    def json(self, name: str) -> Any:
        """File NAME, parsed."""
        return load_json(self.path(name))

    def corrupted(self, name: str, why: str) -> DocumentStoreError:
        """The error for file NAME holding what the index never writes."""
        return DocumentStoreError(f"{self.directory / name}: corrupted, {why}")


def load_main_segment(directory: Path, manifest: Mapping[str, Any], params: BM25Params) -> MainSegment:
    """Open the main segment saved in DIRECTORY (read into memory), every file checked first (module docstring).

    :raises DocumentStoreError: one line naming the file that is changed, damaged or inconsistent.
    """
    verify_all(directory, manifest)  # every file of the generation (its documents too), on parallel threads
    files = SavedFiles(directory, manifest)
    ids = _ids(files, manifest.get("documents"))
    vocab = _vocab(files)
    _check_params(files, params, len(ids))
    indptr = files.array(INDPTR, "int64", len(vocab) + 1)
    check_offsets(indptr, directory / INDPTR)
    data = files.array(DATA, "float32", int(indptr[-1]))
    bound = weight_bound(params, len(ids))
    check_range(data, directory / DATA, -bound, bound)
    indices = files.array(INDICES, "int32", len(data))
    check_range(indices, directory / INDICES, 0, len(ids))
    nonoccurrence = None
    if params.method in NONOCCURRENCE_METHODS:
        nonoccurrence = files.array(NONOCCURRENCE, "float32", len(vocab))
        check_range(nonoccurrence, directory / NONOCCURRENCE, -bound, bound)
    offsets = files.array(OFFSETS, "int64", len(ids) + 1)
    check_offsets(offsets, directory / OFFSETS)
    bm25 = bm25s.BM25(method=params.method, k1=params.k1, b=params.b, delta=params.delta, backend="numpy")
    bm25.backend = params.backend
    bm25.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": len(ids)}
    bm25.vocab_dict = vocab
    bm25.unique_token_ids_set = set(vocab.values())
    bm25.nonoccurrence_array = nonoccurrence
    return MainSegment(bm25, ids, lambda: _tokens(files, int(offsets[-1]), len(vocab)), offsets)


def weight_bound(params: BM25Params, n_docs: int) -> float:
    """A bound on |weight| of every BM25 variant over N_DOCS documents, with room for rounding.

    Each IDF lies within ln(2N + 2) in absolute value and each term-frequency factor within k1 + 1 + delta; a
    stored weight is one product, minus the non-occurrence weight (another) for BM25L and BM25+.
    """
    return 4.0 * (math.log(2.0 * n_docs + 2.0) + 1.0) * (params.k1 + 1.0 + params.delta) + 1.0


def _ids(files: SavedFiles, documents: Any) -> list[str]:
    """The row ids: distinct strings, one per document the manifest counts."""
    ids = files.json(IDS)
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise files.corrupted(IDS, "expected a JSON list of document ids")
    if len(ids) != documents:
        raise files.corrupted(IDS, f"{len(ids)} ids where {files.directory / MANIFEST} counts {documents} documents")
    if len(set(ids)) != len(ids):
        raise files.corrupted(IDS, "an id is listed twice")
    return ids


def _vocab(files: SavedFiles) -> dict[str, int]:
    """The vocabulary: terms to term ids, the ids being 0 .. len - 1, each once."""
    vocab = files.json(VOCAB)
    if not isinstance(vocab, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(vocab) for v in vocab.values()
    ):
        raise files.corrupted(VOCAB, "expected an object of terms to term ids 0 .. n - 1")
    if len(set(vocab.values())) != len(vocab):
        raise files.corrupted(VOCAB, "a term id is given to two terms")
    return vocab


def _check_params(files: SavedFiles, params: BM25Params, n_docs: int) -> None:
    """``params.index.json`` holds the settings the manifest records (bm25s writes it; nothing reads it but this)."""
    saved = files.json(PARAMS)
    if not isinstance(saved, dict):
        raise files.corrupted(PARAMS, "expected an object of BM25 settings")
    expected = {
        "method": params.method,
        "idf_method": params.method,
        "k1": params.k1,
        "b": params.b,
        "delta": params.delta,
        "dtype": "float32",
        "int_dtype": "int32",
        "num_docs": n_docs,
    }
    for key, value in expected.items():
        got = saved.get(key)
        if got != value or isinstance(got, bool):
            raise files.corrupted(PARAMS, f"{key} is {got!r} where {files.directory / MANIFEST} gives {value!r}")


def _tokens(files: SavedFiles, total: int, vocab_size: int) -> np.ndarray:
    """``tokens.npy``: TOTAL term ids, each inside the vocabulary (read on first use by a compaction or save)."""
    tokens = files.array(TOKENS, "int32", total)
    check_range(tokens, files.directory / TOKENS, 0, vocab_size)
    return tokens
