"""What a BM25 store writes into a generation directory, and where a loaded one reads its documents from."""

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from components.stores.bm25.document_table import DocumentTable, JsonlDocumentTable, write_documents_file
from components.stores.bm25.matrix import SaveProgress, quiet
from components.stores.bm25.segments import MainSegment
from components.stores.bm25.settings import relative_to_store
from components.stores.bm25.tokenizers import tokenizer_name

SAVE_BATCH = 10_000  # documents read at a time while a save writes documents.jsonl


def write_generation(
    directory: Path,
    main: MainSegment | None,
    root: Path,
    settings: dict[str, Any],
    lines: Callable[[list[str]], list[bytes]],
    report: SaveProgress = quiet,
) -> dict[str, Any]:
    """
    Fill a generation directory of the store at ``root`` and return its manifest fields; REPORT hears the
    ``writing the index`` and (unless the documents are shared) ``writing documents`` stages.

    Nothing saved is an absolute path: ``document_store_path`` is recorded relative to ``root``.
    """
    shared = settings["document_store_path"]
    if main is not None:
        main.save(directory, report)
        if shared is None:
            write_documents_file(directory, batched(lines, main.ids, report))
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "documents": main.n_docs if main else 0,
        "tokenizer": {"lang": settings["lang"], "tokenizer": tokenizer_name(settings["tokenizer"])},
        "bm25": {name: settings[name] for name in ("method", "k1", "b", "delta")},
        "document_store_path": relative_to_store(shared, root),
    }


def batched(lines: Callable[[list[str]], list[bytes]], ids: list[str], report: SaveProgress = quiet) -> Iterator[bytes]:
    """The saved lines of the documents with ``ids``, read ``SAVE_BATCH`` at a time, so a save never holds all of
    them at once; each batch is told to REPORT (``writing documents``) once its lines were taken."""
    report("writing documents", 0, len(ids))
    for start in range(0, len(ids), SAVE_BATCH):
        yield from lines(ids[start : start + SAVE_BATCH])
        report("writing documents", min(start + SAVE_BATCH, len(ids)), len(ids))


def document_table(shared: str | None, generation: Path, manifest: Mapping[str, Any], ids: list[str]) -> DocumentTable:
    """Where saved documents are read: the sibling FAISS store's live generation, or this generation's own file
    (verified against the generation's MANIFEST)."""
    if shared is None:
        return JsonlDocumentTable(generation, manifest, ids)
    from components.stores.faiss.shared_documents import SavedDocuments

    return SavedDocuments(shared)
