"""Where the parts of an index go (``StoreChoice``), and the Milvus server collections of an index's generations.

``needle index`` notes the server collections before it switches generations and drops those of the generations
the cleanup removed after it (``needle_retrieval.index.build``); a FAISS index or Milvus Lite has none. Kept apart
from the build so the generation writer (``needle_retrieval.index.generation_build``) can name the choice too.
"""

import logging
from dataclasses import dataclass
from pathlib import Path

from haystack.document_stores.errors import DocumentStoreError

from components.stores.crash_safe_generations import MANIFEST, load_json
from needle_retrieval.index.generations import GENERATION

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoreChoice:
    """Where the parts of an index go: ``faiss`` (FAISS + bm25s in the generation) or ``milvus``.

    ``uri`` (a Milvus server URL; None keeps a Milvus Lite database in each generation) and ``collection``
    (default ``needle``) apply to ``milvus`` only.
    """

    store: str = "faiss"
    uri: str | None = None
    collection: str | None = None


DEFAULT_TARGET = StoreChoice()
"""The default of ``build_index(target=...)``: FAISS + bm25s in the generation."""


def server_collections(out: Path, target: StoreChoice) -> dict[str, tuple[str, str]]:
    """Generation name -> (server URI, collection) for the generations of OUT that have a server collection:
    complete ones by their manifest, partial ones by their would-be name on the target server (a killed build
    may have left that collection)."""
    from needle_retrieval.index.milvus_place import MilvusPlace, is_server

    found: dict[str, tuple[str, str]] = {}
    for entry in out.iterdir() if out.is_dir() else []:
        if not GENERATION.fullmatch(entry.name):
            continue
        name = entry.name.removesuffix(".partial")
        if entry.name.endswith(".partial"):
            if target.store == "milvus" and target.uri is not None:
                found[name] = (target.uri, MilvusPlace.for_generation(target.uri, target.collection, name).collection)
            continue
        try:
            recorded = load_json(entry / MANIFEST)
        except DocumentStoreError:
            continue  # a damaged generation names no collection we could be sure of
        if not isinstance(recorded, dict):
            continue
        uri, collection = recorded.get("uri"), recorded.get("collection")
        if isinstance(uri, str) and is_server(uri) and isinstance(collection, str):
            found[name] = (uri, collection)
    return found


def retire_collections(out: Path, before: dict[str, tuple[str, str]]) -> None:
    """Drop the server collections of the generations that are gone from OUT (the cleanup after a switch).

    The new generation is live by then, so a server that cannot be reached only leaves a warning (and the
    collection behind), not a failed build.
    """
    from needle_retrieval.index.milvus import drop_collections

    for generation, (uri, collection) in before.items():
        if (out / generation).is_dir():
            continue
        try:
            drop_collections(uri, [collection])
        except DocumentStoreError as error:
            logger.warning("could not drop %s of the removed generation %s: %s", collection, generation, error)
