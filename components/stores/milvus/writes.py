"""Which rows a write sends under each duplicate policy, and what an overwrite on Milvus Lite must clear.

Milvus does not enforce unique primary keys (an insert of a stored id adds a second row) and milvus-haystack
0.1.0 ignores SKIP and FAIL, so the store looks the ids up first and applies Haystack's policies itself:
NONE/FAIL refuse an id that is stored or repeated in the batch (nothing is written), SKIP keeps the stored
document (and the first of repeated ones), OVERWRITE upserts (the last of repeated ids wins).
"""

from typing import Any

from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from components.stores.milvus.settings import MilvusSettings


def rows_to_write(
    rows: list[dict[str, Any]], policy: DuplicatePolicy, stored: set[str], settings: MilvusSettings, where: str
) -> list[dict[str, Any]]:
    """
    The rows to send under ``policy``, given the ``stored`` ids among them (not needed for OVERWRITE).

    :raises DuplicateDocumentError: under NONE/FAIL, naming the first id stored or repeated.
    """
    key = settings.id_field_name
    if policy == DuplicatePolicy.OVERWRITE:
        return list({row[key]: row for row in rows}.values())
    if policy == DuplicatePolicy.SKIP:
        kept: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row[key] not in stored:
                kept.setdefault(row[key], row)
        return list(kept.values())
    seen: set[str] = set()
    for row in rows:
        if row[key] in stored or row[key] in seen:
            raise DuplicateDocumentError(f"ID {row[key]!r} already exists in {where}")
        seen.add(row[key])
    return rows


def clear_stale_meta(rows: list[dict[str, Any]], stored: list[dict[str, Any]], settings: MilvusSettings) -> None:
    """
    Set to None every meta key a stored row has and its replacement lacks, so that an upsert replaces the meta.

    Upstream (milvus-lite 3.2, local and ``milvus-lite server``): ``upsert`` merges the new row onto the
    stored one, so meta keys the new document no longer has would survive an OVERWRITE; a Milvus server
    replaces the whole row. A null dynamic field reads back as absent (``to_document`` drops None values)
    and matches no filter, like a missing key.
    """
    key = settings.id_field_name
    old = {row[key]: row for row in stored}
    for row in rows:
        for name in old.get(row[key], {}):
            if name not in row:
                row[name] = None
