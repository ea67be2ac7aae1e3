"""Where the Milvus collection of an index generation lives, and the store parameters that open it.

Light (no pymilvus): the manifest checks a recorded place with ``check_recorded`` and the search templates open it
with ``store_params``; ``needle_retrieval.index.milvus`` builds and retires the collections. ``tenant_settings``
turns ``needle index --partition-key FIELD`` into the store setting ``partition_key_field``, which the manifest
records with the other store settings (``IndexManifest.store_settings``) and every search pipeline opens the
collection with.
"""

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from components.stores.bm25.languages import STEMMED
from components.stores.milvus.settings import LANGUAGE_PRESETS, is_lite
from needle_retrieval.errors import NeedleError

LITE_DB = "milvus.db"
DEFAULT_COLLECTION = "needle"
ANALYZERS = {
    "en": "english",
    "zh": "chinese",
    **{code: language.name for code, language in sorted(STEMMED.items()) if language.name in LANGUAGE_PRESETS},
}
"""needle's --lang -> the store's BM25 analyzer preset: English, Chinese (jieba) and each language of Milvus's
stemmer filter. Milvus has no per-character analyzer and no stemmer for the other languages PyStemmer stems."""


def is_server(uri: str) -> bool:
    """Whether ``uri`` names a Milvus server (rather than a Milvus Lite database path)."""
    return not is_lite(uri)


@dataclass(frozen=True)
class MilvusPlace:
    """Where one generation's collection lives: ``uri`` as recorded (relative for Lite) and the collection."""

    uri: str
    collection: str

    @classmethod
    def for_generation(cls, uri: str | None, collection: str | None, generation: str) -> "MilvusPlace":
        """The place of a new generation: Lite inside it, or ``<NAME>_genNNNNNN`` on the server."""
        name = collection or DEFAULT_COLLECTION
        if uri is None:
            return cls(LITE_DB, name)
        return cls(uri, f"{name}_{generation.replace('-', '')}")

    @property
    def server(self) -> bool:
        return is_server(self.uri)

    def uri_under(self, generation_dir: Path) -> str:
        """The URI a store opens: a server's URL, or the Lite database inside ``generation_dir``."""
        return self.uri if self.server else str(generation_dir / self.uri)


def check_recorded(uri: Any, collection: Any) -> str | None:
    """Why a manifest's Milvus ``uri``/``collection`` cannot be one a build wrote, or None when they can."""
    from components.stores.milvus.settings import NAME_PATTERN

    if not isinstance(uri, str) or not uri:
        return f"uri must be a server URL or a Milvus Lite path inside the generation, got {uri!r}"
    if not is_server(uri):
        path = PurePosixPath(uri)
        if path.is_absolute() or ".." in path.parts or path.suffix != ".db":
            return f"uri must be a server URL or a relative Milvus Lite path ending in .db, got {uri!r}"
    if not isinstance(collection, str) or not NAME_PATTERN.fullmatch(collection):
        return f"collection must be a Milvus collection name, got {collection!r}"
    return None


def store_params(uri: str, collection: str, bm25: bool, lang: str | None) -> dict[str, Any]:
    """The MilvusDocumentStore init parameters of an index's collection.

    :raises NeedleError: LANG (the manifest's ``bm25_lang``) has no Milvus analyzer: no build records one.
    """
    if lang is not None and (not isinstance(lang, str) or lang not in ANALYZERS):
        raise NeedleError(
            f"index manifest field 'bm25_lang' is {lang!r:.40}; a Milvus index records one of {', '.join(ANALYZERS)}"
        )
    return {
        "uri": uri,
        "collection_name": collection,
        "metric_type": "IP",
        "bm25": bm25,
        "bm25_analyzer": ANALYZERS[lang or "en"],
    }


def tenant_settings(store: str, field: str | None) -> dict[str, Any]:
    """The store settings of ``needle index --partition-key FIELD`` (none without it), checked as the store checks
    them.

    :raises NeedleError: naming --partition-key: a FAISS index (no partitions), or FIELD not a field name.
    """
    if field is None:
        return {}
    if store != "milvus":
        raise NeedleError(
            f"--partition-key needs --store milvus (a FAISS or BM25 index has no partitions: filter on meta.{field})"
        )
    from components.stores.milvus.settings import MilvusSettings

    try:
        MilvusSettings(partition_key_field=field)
    except ValueError as error:
        raise NeedleError(f"--partition-key {field!r}: {error}") from None
    return {"partition_key_field": field}
