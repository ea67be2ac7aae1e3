"""Create a Milvus collection with the seed's schema, or check that an existing one matches the settings.

The schema is UltraRAG's (VARCHAR id up to ``id_max_length``, FLOAT_VECTOR, VARCHAR text up to
``text_max_length``) plus, with ``bm25``, a sparse field filled by Milvus's BM25 function from the text, each
with its index (dense: ``index_params`` with ``metric_type``; sparse: SPARSE_INVERTED_INDEX with BM25), and a
BOOL field ``EMBEDDED_FIELD`` saying whether the row's vector is the document's embedding. Two optional fields:
``partition_key_field``, a VARCHAR of up to ``TENANT_MAX_LENGTH`` bytes that is Milvus's partition key (each
document's ``meta[<field>]``, its tenant: Milvus hashes it to one of ``num_partitions`` partitions, and a search
filtered on it reads that partition only), and ``learned_sparse_field_name``, a SPARSE_FLOAT_VECTOR of the
documents' ``sparse_embedding`` (SPARSE_INVERTED_INDEX, metric IP).

Documents without an embedding (text for BM25 only) are stored with a placeholder vector and the flag false,
and dense search asks for ``flag == true``. Milvus Lite 3.2.2 accepts nullable FLOAT_VECTOR fields but stores a
null vector as zeros, reads it back as zeros and returns it from dense search (distance 0), so a nullable vector
cannot tell "no embedding" apart. A collection created before the flag ("legacy") holds embedded rows only: it is
searched exactly as before and refuses documents without an embedding.

An existing collection is used only if its fields, dimension and metric are the ones asked for; otherwise a
one-line error names the collection, what differs and the setting to change, and nothing is written.
"""

from typing import Any

from milvus_haystack.document_store import MilvusStoreError
from pymilvus import DataType, Function, FunctionType, MilvusClient
from pymilvus.exceptions import MilvusException

from components.stores.milvus.settings import EMBEDDED_FIELD as EMBEDDED_FIELD  # re-exported: records, filters use it
from components.stores.milvus.settings import MilvusSettings

TENANT_MAX_LENGTH = 512  # bytes of a partition key value (a tenant id)


class MilvusCollectionError(MilvusStoreError):  # type: ignore[misc]
    """
    A Milvus collection cannot be used as configured (missing, or built with other fields, size or metric).

    A ``MilvusStoreError`` (a ``DocumentStoreError``), so code written against milvus-haystack catches it.
    """


def where(settings: MilvusSettings) -> str:
    """How errors name the collection: its name and the URI it lives at."""
    return f"Milvus collection {settings.collection_name!r} at {settings.uri}"


def missing(settings: MilvusSettings) -> MilvusCollectionError:
    """The error for a search in a collection that does not exist."""
    return MilvusCollectionError(
        f"{where(settings)} does not exist: write documents into it first (needle index --store milvus, or "
        f"pipelines/milvus_index.yaml), or set collection_name/uri to an existing one"
    )


def is_missing(error: MilvusException) -> bool:
    """Whether Milvus says the collection does not exist (code 100; Milvus Lite also sets the legacy code 4)."""
    message = str(getattr(error, "message", "")).lower()
    return error.code in (4, 100) or ("collection" in message and ("not found" in message or "not exist" in message))


def is_released(error: MilvusException) -> bool:
    """Whether Milvus says the collection is not loaded (code 101, e.g. after a server restart)."""
    message = str(getattr(error, "message", "")).lower()
    return error.code == 101 or "not loaded" in message or "released" in message


def bm25_function_name(settings: MilvusSettings) -> str:
    """The name of the collection's BM25 function."""
    return f"{settings.sparse_field_name}_bm25"


def create_collection(client: MilvusClient, settings: MilvusSettings, dim: int) -> None:
    """Create the collection, its indexes, and load it for search."""
    schema = client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field(settings.id_field_name, DataType.VARCHAR, is_primary=True, max_length=settings.id_max_length)
    text_options: dict[str, Any] = {}
    if settings.bm25:
        text_options = {"enable_analyzer": True, "analyzer_params": settings.analyzer_params()}
    schema.add_field(settings.text_field_name, DataType.VARCHAR, max_length=settings.text_max_length, **text_options)
    schema.add_field(settings.vector_field_name, DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field(EMBEDDED_FIELD, DataType.BOOL)
    if settings.bm25:
        schema.add_field(settings.sparse_field_name, DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name=bm25_function_name(settings),
                input_field_names=[settings.text_field_name],
                output_field_names=[settings.sparse_field_name],
                function_type=FunctionType.BM25,
            )
        )
    if settings.partition_key_field is not None:
        schema.add_field(
            settings.partition_key_field, DataType.VARCHAR, max_length=TENANT_MAX_LENGTH, is_partition_key=True
        )
    if settings.learned_sparse_field_name is not None:
        schema.add_field(settings.learned_sparse_field_name, DataType.SPARSE_FLOAT_VECTOR)
    index = client.prepare_index_params()
    index.add_index(settings.vector_field_name, **settings.dense_index())
    if settings.bm25:
        index.add_index(settings.sparse_field_name, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    if settings.learned_sparse_field_name is not None:
        index.add_index(settings.learned_sparse_field_name, index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    partitions = {} if settings.num_partitions is None else {"num_partitions": settings.num_partitions}
    client.create_collection(
        settings.collection_name,
        schema=schema,
        index_params=index,
        consistency_level=settings.consistency_level,
        **partitions,
    )
    client.load_collection(settings.collection_name, timeout=settings.timeout)


def check_collection(client: MilvusClient, settings: MilvusSettings, dim: int | None) -> tuple[int, bool]:
    """
    Check an existing collection against the settings (and ``dim`` when known).

    :returns: its dimension, and whether it has ``EMBEDDED_FIELD`` (False: a legacy collection).

    :raises MilvusCollectionError: naming what differs and the setting that selects another collection.
    """
    described = client.describe_collection(settings.collection_name)
    fields = {f["name"]: f for f in described["fields"]}
    hint = "use another collection_name, or drop the collection to rebuild it"
    expected = {
        settings.id_field_name: (DataType.VARCHAR, "id_field_name"),
        settings.text_field_name: (DataType.VARCHAR, "text_field_name"),
        settings.vector_field_name: (DataType.FLOAT_VECTOR, "vector_field_name"),
    }
    if settings.bm25:
        expected[settings.sparse_field_name] = (DataType.SPARSE_FLOAT_VECTOR, "sparse_field_name (or bm25=False)")
    if settings.learned_sparse_field_name is not None:
        expected[settings.learned_sparse_field_name] = (DataType.SPARSE_FLOAT_VECTOR, "learned_sparse_field_name")
    for name, (kind, setting) in expected.items():
        if name not in fields or fields[name]["type"] != kind:
            raise MilvusCollectionError(
                f"{where(settings)} has no {kind.name} field {name!r} (its fields: {_shown_fields(fields)}): "
                f"set {setting}, or {hint}"
            )
    _check_optional_fields(described, fields, settings, hint)
    found = int(fields[settings.vector_field_name]["params"]["dim"])
    if dim is not None and found != dim:
        raise MilvusCollectionError(
            f"{where(settings)} holds {found}-dimensional vectors, these are {dim}-dimensional: "
            f"embed with the collection's model, or {hint}"
        )
    metric = dense_metric(client, settings)
    if metric is not None and metric != settings.metric_type:
        raise MilvusCollectionError(
            f"{where(settings)} is indexed with metric {metric}, not {settings.metric_type}: "
            f"set metric_type={metric}, or {hint}"
        )
    flag = fields.get(EMBEDDED_FIELD)
    return found, flag is not None and flag["type"] == DataType.BOOL


def _check_optional_fields(
    described: dict[str, Any], fields: dict[str, Any], settings: MilvusSettings, hint: str
) -> None:
    """Refuse a collection whose partition key or learned sparse field is not the one the settings name (a write
    would miss a field Milvus requires, or a tenant filter would scan every partition), or whose BM25 output field
    the settings name as the learned sparse field (Milvus fills it from the text: writes and searches would fail)."""
    keys = [name for name, field in fields.items() if field.get("is_partition_key")]
    wanted = settings.partition_key_field
    if keys != ([wanted] if wanted is not None else []):
        found = f"partition key field {keys[0]!r}" if keys else "no partition key field"
        fix = f"set partition_key_field={keys[0]!r}" if keys else "leave partition_key_field unset"
        raise MilvusCollectionError(
            f"{where(settings)} has {found}, but partition_key_field is {wanted!r}: {fix}, or {hint}"
        )
    if wanted is not None and fields[wanted]["type"] != DataType.VARCHAR:
        raise MilvusCollectionError(
            f"{where(settings)} has partition key field {wanted!r} of type {fields[wanted]['type'].name}, not VARCHAR "
            f"(partition_key_field holds string tenants): {hint}"
        )
    outputs = {name for function in described.get("functions", []) for name in function.get("output_field_names", [])}
    wanted_learned = settings.learned_sparse_field_name
    if wanted_learned in outputs:
        raise MilvusCollectionError(
            f"{where(settings)} fills {wanted_learned!r} with its BM25 function, but learned_sparse_field_name names "
            f"it: set sparse_field_name={wanted_learned!r} (and leave learned_sparse_field_name unset), or {hint}"
        )
    learned = [
        name for name, field in fields.items() if field["type"] == DataType.SPARSE_FLOAT_VECTOR and name not in outputs
    ]
    if learned and learned != [wanted_learned]:
        raise MilvusCollectionError(
            f"{where(settings)} has learned sparse field {learned[0]!r}, not {wanted_learned!r}: "
            f"set learned_sparse_field_name={learned[0]!r}, or {hint}"
        )


def _shown_fields(fields: dict[str, Any]) -> str:
    """The collection's fields a setting can name (the embedding flag is the store's own)."""
    return ", ".join(name for name in fields if name != EMBEDDED_FIELD)


def dense_metric(client: MilvusClient, settings: MilvusSettings) -> str | None:
    """The metric of the dense field's index (None when it has no index)."""
    names = client.list_indexes(settings.collection_name, field_name=settings.vector_field_name)
    if not names:
        return None
    metric: str = client.describe_index(settings.collection_name, names[0])["metric_type"]
    return metric


def ensure_loaded(client: MilvusClient, settings: MilvusSettings) -> None:
    """Load the collection for search if it is not (a reopened database starts unloaded)."""
    state = client.get_load_state(settings.collection_name)["state"]
    if getattr(state, "name", str(state)) != "Loaded":
        client.load_collection(settings.collection_name, timeout=settings.timeout)
