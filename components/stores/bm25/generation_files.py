"""What a BM25 store writes into a generation directory, and where a loaded one reads its documents from."""

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from components.stores.bm25.document_table import DocumentTable, JsonlDocumentTable, write_documents_file
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
) -> dict[str, Any]:
    """
    Fill a generation directory of the store at ``root`` and return its manifest fields.

    Nothing saved is an absolute path: ``document_store_path`` is recorded relative to ``root``.
    """
    shared = settings["document_store_path"]
    if main is not None:
        main.save(directory)
        if shared is None:
            write_documents_file(directory, batched(lines, main.ids))
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "documents": main.n_docs if main else 0,
        "tokenizer": {"lang": settings["lang"], "tokenizer": tokenizer_name(settings["tokenizer"])},
        "bm25": {name: settings[name] for name in ("method", "k1", "b", "delta")},
        "document_store_path": relative_to_store(shared, root),
    }


def batched(lines: Callable[[list[str]], list[bytes]], ids: list[str]) -> Iterator[bytes]:
    """The saved lines of the documents with ``ids``, read ``SAVE_BATCH`` at a time, so a save never holds all of
    them at once."""
    for start in range(0, len(ids), SAVE_BATCH):
        yield from lines(ids[start : start + SAVE_BATCH])


def document_table(shared: str | None, generation: Path, manifest: Mapping[str, Any], ids: list[str]) -> DocumentTable:
    """Where saved documents are read: the sibling FAISS store's live generation, or this generation's own file
    (verified against the generation's MANIFEST)."""
    if shared is None:
        return JsonlDocumentTable(generation, manifest, ids)
    from components.stores.faiss.shared_documents import SavedDocuments

    return SavedDocuments(shared)
