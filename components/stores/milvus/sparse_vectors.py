"""Haystack ``SparseEmbedding``s as Milvus SPARSE_FLOAT_VECTOR values and back: the learned sparse field.

A store with ``learned_sparse_field_name`` keeps each Document's ``sparse_embedding`` (a SPLADE-style encoder's
term weights) in that field, indexed by SPARSE_INVERTED_INDEX with metric IP, so a search scores each document
by the dot product of its weights and the query's. Milvus takes term ids in [0, 2^32 - 2] and finite,
non-negative float32 weights, at least one of them non-zero; it refuses anything else with a gRPC error that
names neither the document nor the cause, and a write of several chunks would then stop part-way. Here every
vector is checked first, and a bad one is one ValueError naming the document (or query) and the field, before
anything is written or searched.

The checks run on the weights as Milvus stores them, rounded to float32: a weight such as 1e-50 is non-zero as a
Python float but 0 in float32 (a document of only such weights has no non-zero weight), and 3.4028235e38 rounds to
float32's largest value (accepted) where 3.5e38 rounds to infinity (refused). A vector is stored as
``{term id: weight}`` of those rounded weights; it reads back as a ``SparseEmbedding`` with its term ids in
ascending order (the order Milvus keeps them in) and the same float32 weights (Milvus leaves out zero weights).
"""

import math
import numbers
import struct
from typing import Any

from haystack.dataclasses.sparse_embedding import SparseEmbedding

MAX_TERM_ID = 2**32 - 2  # Milvus: "sparse vector index must be positive and less than 2^32-1"


def sparse_value(embedding: Any, name: str, field: str, query: bool = False) -> dict[int, float]:
    """
    ``embedding`` as a Milvus sparse vector ``{term id: weight}``.

    :param name: how errors name the document or query (``documents[3] (id 'x')``, ``query_sparse_embedding``).
    :param field: the learned sparse field, named in errors.
    :param query: a query may have no non-zero weight (it then matches nothing); a document may not.
    :raises ValueError: one line naming NAME and FIELD: no SparseEmbedding, a term id out of range or repeated,
        a weight that is negative, NaN, infinite or too large for float32, or (documents) no weight that is
        non-zero in float32.
    """
    where = f"{name}: its sparse_embedding (Milvus field {field!r})"
    if not isinstance(embedding, SparseEmbedding):
        raise ValueError(f"{where} must be a haystack SparseEmbedding, got {type(embedding).__name__}")
    vector: dict[int, float] = {}
    pairs: list[tuple[Any, Any]] = list(zip(embedding.indices, embedding.values, strict=True))  # as given: any type
    for given, value in pairs:
        if isinstance(given, bool) or not isinstance(given, numbers.Integral) or not 0 <= int(given) <= MAX_TERM_ID:
            raise ValueError(f"{where} has term id {given!r}; Milvus takes integers in [0, {MAX_TERM_ID}]")
        index = int(given)
        if index in vector:
            raise ValueError(f"{where} repeats term id {index}")
        weight = _float32(value)
        if weight is None:
            raise ValueError(
                f"{where} has weight {value!r} at term id {index}; Milvus takes finite, non-negative float32 weights"
            )
        vector[index] = weight
    if not query and not any(vector.values()):
        raise ValueError(
            f"{where} has no non-zero weight in float32 (as Milvus stores weights; one under about 1.4e-45 rounds "
            f"to 0); Milvus stores at least one (re-encode the document)"
        )
    return dict(sorted(vector.items()))


_FLOAT32 = struct.Struct("<f")


def _float32(value: Any) -> float | None:
    """``value`` rounded to float32 (as Milvus stores it), or None if it is no number, negative, NaN, or infinite
    once rounded (over float32's largest value, about 3.4028235e38)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        given = float(value)
    except OverflowError:  # an int past float64's range
        return None
    if math.isnan(given) or given < 0:  # a tiny negative rounds to -0.0 but is still a negative weight
        return None
    try:
        rounded: float = _FLOAT32.unpack(_FLOAT32.pack(given))[0]  # C's rounding to float; 0.2 µs against numpy's 2
    except OverflowError:  # past float32's largest value
        return None
    return rounded if math.isfinite(rounded) else None


def to_sparse_embedding(value: Any) -> SparseEmbedding | None:
    """A stored sparse vector (Milvus returns ``{term id: weight}``) as a SparseEmbedding, ascending term ids."""
    if not value:
        return None
    items = sorted((int(index), float(weight)) for index, weight in dict(value).items())
    return SparseEmbedding(indices=[index for index, _ in items], values=[weight for _, weight in items])
