"""The saved generations of a sparse store: the BM25 store's segment files and checks, over learned weights.

Layout of a store directory, written crash-safely by ``components.stores.crash_safe_generations``::

    <path>/CURRENT                          one line: the live generation, e.g. "gen-000003"
    <path>/gen-000003/manifest.json         format, document count, vocabulary width, document source, and each
                                            file's size and sha256
    <path>/gen-000003/data.csc.index.npy    float32 weights, term by term   } the document-term matrix in CSC form,
    <path>/gen-000003/indices.csc.index.npy int32 rows, term by term        } as the BM25 store's segment saves
    <path>/gen-000003/indptr.csc.index.npy  int64 offsets, one per term + 1 } bm25s' (same names, same dtypes)
    <path>/gen-000003/ids.json              the row ids
    <path>/gen-000003/documents.jsonl, documents.offsets.npy   the documents, unless shared with a FAISS store

Opening one checks it as the BM25 store checks its own (``components.stores.bm25.segment_files``): every file's
sha256 against the manifest, then each array's dtype and length, offsets that start at 0 and never decrease,
rows inside the document count, finite weights >= 0 (a write refuses negative ones); a file that fails is refused
in one line naming it.
"""

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from components.stores.bm25.document_table import DocumentTable, write_documents_file
from components.stores.bm25.generation_files import batched, document_table
from components.stores.bm25.matrix import SaveProgress, quiet
from components.stores.bm25.persistence import check_offsets, check_range
from components.stores.bm25.segment_files import DATA, IDS, INDICES, INDPTR, SavedFiles
from components.stores.bm25.settings import relative_to_store
from components.stores.crash_safe_generations import Generations, verify_all
from components.stores.sparse.index import Compressed, IndexState

GENERATIONS = Generations(kind="sparse index", digits=6, stamp={"format": "needle-sparse", "format_version": 1})
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def write_generation(
    directory: Path,
    state: IndexState,
    root: Path,
    document_store_path: str | None,
    lines: Callable[[list[str]], list[bytes]],
    report: SaveProgress = quiet,
) -> dict[str, Any]:
    """Fill a generation directory of the store at ROOT with the compacted STATE (and, unless shared, the
    documents, whose saved lines LINES(ids) gives); returns the manifest fields. REPORT hears the stages
    ``writing the index`` and ``writing documents``, in documents."""
    report("writing the index", 0, len(state.ids))
    csc = state.csc
    np.save(directory / DATA, np.asarray(csc.data, dtype=np.float32))
    np.save(directory / INDICES, np.asarray(csc.indices, dtype=np.int32))
    np.save(directory / INDPTR, np.asarray(csc.indptr, dtype=np.int64))
    (directory / IDS).write_text(json.dumps(list(state.ids), ensure_ascii=False), encoding="utf-8")
    report("writing the index", len(state.ids), len(state.ids))
    if document_store_path is None:
        write_documents_file(directory, batched(lines, list(state.ids), report))
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "documents": len(state.ids),
        "vocabulary": csc.lines,
        "document_store_path": relative_to_store(document_store_path, root),
    }


def load_generation(
    generation: Path, manifest: Mapping[str, Any], shared: str | None
) -> tuple[IndexState, DocumentTable]:
    """The index and documents saved in GENERATION, every file verified and checked first (module docstring).

    :param shared: the FAISS store directory documents are read from (already resolved), or None for our own.
    :raises DocumentStoreError: one line naming the file that is changed, damaged or inconsistent.
    """
    verify_all(generation, manifest)
    files = SavedFiles(generation, manifest)
    documents, vocabulary = manifest.get("documents"), manifest.get("vocabulary")
    if not isinstance(vocabulary, int) or isinstance(vocabulary, bool) or not 0 <= vocabulary < 2**31:
        raise files.corrupted("manifest.json", f"vocabulary is {vocabulary!r}, not a count of terms")
    ids = files.json(IDS)
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(set(ids)) != len(ids):
        raise files.corrupted(IDS, "expected a JSON list of distinct document ids")
    if len(ids) != documents:
        raise files.corrupted(IDS, f"{len(ids)} ids where the manifest counts {documents!r} documents")
    indptr = files.array(INDPTR, "int64", vocabulary + 1)
    check_offsets(indptr, generation / INDPTR)
    data = files.array(DATA, "float32", int(indptr[-1]))
    check_range(data, generation / DATA, 0.0, _FLOAT32_MAX)  # weights >= 0 (as written), finite: NaN, inf refused
    indices = files.array(INDICES, "int32", len(data))
    check_range(indices, generation / INDICES, 0, len(ids))
    state = IndexState.loaded(ids, Compressed(indptr, indices, data, len(ids)))
    return state, document_table(shared, generation, manifest, ids)
