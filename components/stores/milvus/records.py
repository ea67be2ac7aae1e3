"""Documents to Milvus rows and back, under the store's field names.

Rows follow the seed's schema: the id and text fields named by the settings, the vector, the embedding flag
(``collection.EMBEDDED_FIELD``; a document without an embedding gets ``placeholder`` as its vector) and the
meta keys as dynamic fields. A meta key that would overwrite one of those fields is an error. Meta values are
stored as JSON, so they read back as written (lists, nested dicts, empty lists too); a None value reads back as
absent, which Haystack's filters treat alike, and a value JSON cannot hold is dropped with a warning. Text longer
than ``text_max_length`` UTF-8 bytes (Milvus counts VARCHAR length in bytes) is cut at a character boundary with
a warning, never a failed insert; an id over ``id_max_length`` is an error naming it.

With ``partition_key_field`` the meta key of that name is the document's tenant, stored in the collection's
partition key field (a string of up to ``TENANT_MAX_LENGTH`` bytes that a filter can name, required: Milvus must
place every row in a partition) and read back into the meta like any other key. With ``learned_sparse_field_name``
each document's ``sparse_embedding`` is stored in that field (``sparse_vectors``) and read back with the
embedding.
"""

import json
import logging
from typing import Any

from haystack import Document
from pymilvus.client.search_result import Hit

from components.stores.milvus.collection import EMBEDDED_FIELD, TENANT_MAX_LENGTH, MilvusCollectionError, where
from components.stores.milvus.filters import sayable
from components.stores.milvus.settings import MilvusSettings
from components.stores.milvus.sparse_vectors import sparse_value, to_sparse_embedding

logger = logging.getLogger(__name__)


def embedding_size(documents: list[Document]) -> int | None:
    """
    The length of the documents' embeddings (None when none has one).

    :raises ValueError: naming the first document whose embedding is empty or of another length than the first.
    """
    size: int | None = None
    for position, document in enumerate(documents):
        if document.embedding is None:
            continue
        if not document.embedding or (size is not None and len(document.embedding) != size):
            expected = f"{size} values like the other embedded documents" if size else "at least 1 value"
            raise ValueError(
                f"documents[{position}] (id {document.id!r}) has an embedding of {len(document.embedding)} values, "
                f"expected {expected}"
            )
        size = len(document.embedding)
    return size


def placeholder(dim: int) -> list[float]:
    """The vector stored for a document without an embedding: a unit vector, valid under IP, COSINE and L2."""
    return [1.0] + [0.0] * (dim - 1)


def to_rows(documents: list[Document], settings: MilvusSettings, dim: int, flagged: bool) -> list[dict[str, Any]]:
    """
    One Milvus row per document for ``dim``-dimensional vectors (all checked before any is built, so a bad one
    writes nothing); ``flagged``: the collection has ``EMBEDDED_FIELD`` (else it refuses documents without one).

    :raises ValueError: naming the document whose id is too long, whose meta key collides with a field, whose
        tenant (``partition_key_field``) is missing or not a short string, or whose sparse embedding is missing
        or not one Milvus stores (``learned_sparse_field_name``).
    :raises MilvusCollectionError: a document without an embedding for a legacy collection.
    """
    reserved = {*not_meta(settings), EMBEDDED_FIELD}
    rows, cut = [], []
    for position, document in enumerate(documents):
        name = f"documents[{position}] (id {document.id!r})"
        _check_id(document.id, name, settings)
        if document.embedding is None and not flagged:
            raise MilvusCollectionError(
                f"{where(settings)} was created before documents without an embedding could be stored (it has no "
                f"{EMBEDDED_FIELD!r} field) and {name} has none: embed it, or write into a new collection_name"
            )
        clashes = reserved & set(document.meta)
        if clashes:
            raise ValueError(
                f"{name}: meta key(s) {sorted(clashes)} would overwrite the collection's fields; rename them"
            )
        text = document.content or ""
        if len(text.encode("utf-8")) > settings.text_max_length:
            text = truncate_utf8(text, settings.text_max_length)
            cut.append(document.id)
        vector = placeholder(dim) if document.embedding is None else list(document.embedding)
        row = {
            **_storable_meta(document),
            settings.id_field_name: document.id,
            settings.text_field_name: text,
            settings.vector_field_name: vector,
        }
        if flagged:
            row[EMBEDDED_FIELD] = document.embedding is not None
        if settings.partition_key_field is not None:
            row[settings.partition_key_field] = check_tenant(
                document.meta.get(settings.partition_key_field), settings.partition_key_field, name
            )
        if settings.learned_sparse_field_name is not None:
            learned = settings.learned_sparse_field_name
            row[learned] = sparse_value(document.sparse_embedding, name, learned)
        rows.append(row)
    if cut:
        logger.warning(
            "%d document(s) longer than text_max_length=%d bytes were truncated (first: %r)",
            len(cut),
            settings.text_max_length,
            cut[0],
        )
    return rows


def check_tenant(value: Any, key: str, name: str) -> str:
    """``value``, the tenant of NAME (its ``meta[KEY]``), if it is a string Milvus's partition key field holds and
    a filter can name (``filters.sayable``: else it would be stored, but no filter on it would run).

    :raises ValueError: naming NAME, KEY and what a tenant must be.
    """
    rule = (
        f"{name}: meta[{key!r}] is its tenant (partition_key_field) and must be a string of at most "
        f"{TENANT_MAX_LENGTH} bytes (UTF-8)"
    )
    if not isinstance(value, str):
        raise ValueError(f"{rule}, got {value!r:.60}")
    if not sayable(value):
        raise ValueError(
            f"{rule} without control characters U+0000-U+0008, U+000B, U+000C, U+000E-U+001F or lone surrogates "
            f"(Milvus filters cannot hold them; tab, newline and carriage return are allowed), got {value!r:.60}"
        )
    if len(value.encode("utf-8")) > TENANT_MAX_LENGTH:
        raise ValueError(f"{rule}, got {value!r:.60}")
    return value


def _storable_meta(document: Document) -> dict[str, Any]:
    """The meta as stored: None values left out (absent and None filter alike), non-JSON values dropped, warned."""
    kept, dropped = {}, []
    for key, value in document.meta.items():
        if value is None:
            continue
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            dropped.append(key)
            continue
        kept[key] = value
    if dropped:
        logger.warning(
            "document %r: meta %s cannot be stored as JSON (Milvus dynamic fields) and was dropped",
            document.id,
            dropped,
        )
    return kept


def _check_id(document_id: str, name: str, settings: MilvusSettings) -> None:
    size = len(document_id.encode("utf-8"))
    if size > settings.id_max_length:
        raise ValueError(
            f"{name}: the id is {size} bytes long, over id_max_length={settings.id_max_length}; "
            f"shorten the ids or raise id_max_length (at most 65535) for a new collection"
        )


def truncate_utf8(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding has at most ``limit`` bytes (never half a character)."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def output_fields(settings: MilvusSettings) -> list[str]:
    """The fields a search returns: text, dynamic meta and the tenant (the id always comes); not the vectors."""
    tenant = [] if settings.partition_key_field is None else [settings.partition_key_field]
    return [settings.text_field_name, "$meta", *tenant]


def stored_fields(settings: MilvusSettings, flagged: bool) -> list[str]:
    """The fields that make a whole Document: text, meta, the vector, (``flagged``) whether it is an embedding,
    and the learned sparse vector."""
    learned = [] if settings.learned_sparse_field_name is None else [settings.learned_sparse_field_name]
    return [*output_fields(settings), settings.vector_field_name, *([EMBEDDED_FIELD] if flagged else []), *learned]


def to_document(entity: dict[str, Any], settings: MilvusSettings, **extra: Any) -> Document:
    """
    A new Document from one returned entity; ``extra`` sets its score and ``meta['retrieval_type']``.

    The embedding is the stored vector when the entity has one and its flag (if the collection has the flag)
    says it is the document's; a placeholder never comes back.
    """
    # None: a meta key cleared by an overwrite on Milvus Lite (writes.clear_stale_meta); never written otherwise
    hidden = {*not_meta(settings), EMBEDDED_FIELD}
    meta = {key: value for key, value in entity.items() if key not in hidden and value is not None}
    retrieval_type = extra.pop("retrieval_type", None)
    if retrieval_type is not None:
        meta["retrieval_type"] = retrieval_type
    vector = entity.get(settings.vector_field_name)
    embedding = [float(v) for v in vector] if vector is not None and entity.get(EMBEDDED_FIELD, True) else None
    text = entity.get(settings.text_field_name)
    learned = settings.learned_sparse_field_name
    sparse = to_sparse_embedding(entity.get(learned)) if learned is not None else None
    return Document(
        id=entity[settings.id_field_name],
        content=text,
        meta=meta,
        embedding=embedding,
        sparse_embedding=sparse,
        **extra,
    )


def not_meta(settings: MilvusSettings) -> set[str]:
    """The fields of the schema that hold no meta key (a meta key of that name would overwrite one)."""
    fields = {settings.id_field_name, settings.text_field_name, settings.vector_field_name, settings.sparse_field_name}
    learned = settings.learned_sparse_field_name
    return fields | ({learned} if learned is not None else set())


def hits_to_documents(hits: list[list[Hit]], settings: MilvusSettings, retrieval_type: str) -> list[list[Document]]:
    """One best-first Document list per query from Milvus search hits, with higher-is-better scores."""
    return [
        [
            to_document(
                {**hit["entity"], settings.id_field_name: hit.id},
                settings,
                score=_score(float(hit["distance"]), retrieval_type, settings.metric_type),
                retrieval_type=retrieval_type,
            )
            for hit in query_hits
        ]
        for query_hits in hits
    ]


def _score(distance: float, retrieval_type: str, metric: str) -> float:
    """
    Milvus's distance as a higher-is-better score.

    BM25 scores are positive on Milvus servers but come back negated from Milvus Lite, so ``abs`` gives the
    score on both; L2 distances are negated; IP, cosine and fused (RRF, weighted) scores are kept.
    """
    if retrieval_type == "sparse":
        return abs(distance)
    if retrieval_type == "dense" and metric == "L2":
        return -distance
    return distance
