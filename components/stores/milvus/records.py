"""Documents to Milvus rows and back, and Haystack filters to Milvus expressions, under the store's field names.

Rows follow the seed's schema: the id and text fields named by the settings, the vector, and the meta keys as
dynamic fields. A meta key that would overwrite one of those fields is an error; meta values Milvus cannot
store are dropped with a warning (milvus-haystack's ``_discard_invalid_meta``). Text longer than
``text_max_length`` UTF-8 bytes (Milvus counts VARCHAR length in bytes) is cut at a character boundary with
a warning, never a failed insert; an id over ``id_max_length`` is an error naming it.
"""

import logging
from typing import Any

from haystack import Document
from milvus_haystack import MilvusDocumentStore as UpstreamMilvusDocumentStore
from milvus_haystack.filters import parse_filters
from pymilvus.client.search_result import Hit

from components.checks import check_filters
from components.stores.milvus.settings import MilvusSettings

logger = logging.getLogger(__name__)


def milvus_filter(filters: dict[str, Any] | None, settings: MilvusSettings) -> str | None:
    """
    A Milvus boolean expression for Haystack ``filters``: '' matches everything, None nothing.

    ``id``/``content`` map to the collection's id and text fields. Logical nodes follow Haystack's semantics
    with empty ``conditions`` too (AND of none is true, OR of none false, NOT is NOT AND): upstream's
    ``parse_filters`` renders an empty list as ``()``, which Milvus refuses as a syntax error.
    """
    check_filters(filters)
    if not filters:
        return ""
    return _expression(filters, settings)


def _expression(node: dict[str, Any], settings: MilvusSettings) -> str | None:
    if "field" in node:
        names = {"id": settings.id_field_name, "content": settings.text_field_name}
        return str(parse_filters({**node, "field": names.get(node["field"], node["field"])}))
    operator = node["operator"]
    children = [_expression(child, settings) for child in node["conditions"]]
    if operator == "OR":
        if "" in children:
            return ""
        kept = [child for child in children if child is not None]
        return "(" + " or ".join(kept) + ")" if kept else None
    if None in children:  # AND, and NOT (which is NOT AND)
        return "" if operator == "NOT" else None
    kept = [child for child in children if child]
    if not kept:
        return None if operator == "NOT" else ""
    joined = "(" + " and ".join(kept) + ")"
    return f"(not {joined})" if operator == "NOT" else joined


def to_rows(documents: list[Document], settings: MilvusSettings) -> list[dict[str, Any]]:
    """
    One Milvus row per document (all checked before any is built, so a bad one writes nothing).

    :raises ValueError: naming the document whose id is too long, whose embedding is missing or of another
        length than the first one's, or whose meta key collides with a field of the collection.
    """
    reserved = {
        settings.id_field_name,
        settings.text_field_name,
        settings.vector_field_name,
        settings.sparse_field_name,
    }
    dim = len(documents[0].embedding or ()) if documents else 0
    rows, cut = [], []
    for position, document in enumerate(documents):
        name = f"documents[{position}] (id {document.id!r})"
        _check_id(document.id, name, settings)
        if document.embedding is None or len(document.embedding) != dim or not dim:
            got = "no embedding" if document.embedding is None else f"{len(document.embedding)} values"
            raise ValueError(
                f"{name} has {got}, expected an embedding of {dim or 'at least 1'} values like documents[0]"
            )
        clashes = reserved & set(document.meta)
        if clashes:
            raise ValueError(
                f"{name}: meta key(s) {sorted(clashes)} would overwrite the collection's fields; rename them"
            )
        meta = UpstreamMilvusDocumentStore._discard_invalid_meta(document).meta
        text = document.content or ""
        if len(text.encode("utf-8")) > settings.text_max_length:
            text = truncate_utf8(text, settings.text_max_length)
            cut.append(document.id)
        rows.append(
            {
                **meta,
                settings.id_field_name: document.id,
                settings.text_field_name: text,
                settings.vector_field_name: list(document.embedding),
            }
        )
    if cut:
        logger.warning(
            "%d document(s) longer than text_max_length=%d bytes were truncated (first: %r)",
            len(cut),
            settings.text_max_length,
            cut[0],
        )
    return rows


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
    """The fields a search or query returns: text and dynamic meta (the id always comes); never the vectors."""
    return [settings.text_field_name, "$meta"]


def to_document(entity: dict[str, Any], settings: MilvusSettings, **extra: Any) -> Document:
    """A new Document from one returned entity; ``extra`` sets its score and ``meta['retrieval_type']``."""
    # None: a meta key cleared by an overwrite on Milvus Lite (writes.clear_stale_meta); never written otherwise
    meta = {key: value for key, value in entity.items() if key not in _not_meta(settings) and value is not None}
    retrieval_type = extra.pop("retrieval_type", None)
    if retrieval_type is not None:
        meta["retrieval_type"] = retrieval_type
    return Document(id=entity[settings.id_field_name], content=entity.get(settings.text_field_name), meta=meta, **extra)


def _not_meta(settings: MilvusSettings) -> set[str]:
    return {settings.id_field_name, settings.text_field_name, settings.vector_field_name, settings.sparse_field_name}


def hits_to_documents(hits: list[list[Hit]], settings: MilvusSettings, retrieval_type: str) -> list[list[Document]]:
    """One best-first Document list per query from Milvus search hits, with higher-is-better scores."""
    return [
        [
            to_document(
                {**hit["entity"], settings.id_field_name: hit["id"]},
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
