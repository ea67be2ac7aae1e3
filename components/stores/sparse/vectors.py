"""The checks a learned sparse vector passes before a store indexes it or a retriever scores with it.

A SPLADE vector is term ids of a model's vocabulary and their weights. The index trusts them as array indices
and adds their products, so each is checked once, at the door, with a message naming the document or the query.
"""

from typing import Any

import numpy as np
from haystack.dataclasses import SparseEmbedding

MAX_TERM = 2**31 - 1
"""Term ids are saved as int32 (as bm25s saves its term ids); every real vocabulary is far smaller."""


def check_sparse(vector: Any, where: str) -> SparseEmbedding:
    """VECTOR itself when it is a SparseEmbedding of distinct term ids in [0, 2**31 - 1) with finite weights.

    An empty vector is valid: SPLADE gives one to a text in which no term activates. Such a document is stored
    and never found by a sparse search; such a query finds nothing.

    :param where: how the message names it, e.g. ``documents[3] (id 'a').sparse_embedding``.
    :raises ValueError: one line naming WHERE and what is wrong.
    """
    if not isinstance(vector, SparseEmbedding):
        raise ValueError(f"{where} must be a SparseEmbedding (indices, values), got {type(vector).__name__}")
    if len(vector.indices) != len(vector.values):
        raise ValueError(f"{where}: {len(vector.indices)} indices but {len(vector.values)} values")
    if not len(vector.indices):
        return vector  # numpy reads [] as float64: nothing to check, and nothing wrong
    indices, values = _numbers(vector.indices), _numbers(vector.values)
    if indices is None or indices.dtype.kind not in "iu" or (len(indices) and not 0 <= indices.min() < MAX_TERM):
        raise ValueError(f"{where}: every index must be a term id, an integer in [0, {MAX_TERM})")
    if len(indices) and indices.max() >= MAX_TERM:
        raise ValueError(f"{where}: every index must be a term id, an integer in [0, {MAX_TERM})")
    if len(indices) > 1 and not (np.diff(indices) > 0).all() and len(np.unique(indices)) != len(indices):
        raise ValueError(f"{where}: a term id is listed twice")
    if values is None or values.dtype.kind not in "iuf" or not np.isfinite(values).all():
        raise ValueError(f"{where}: every value must be a finite number")
    if len(values) and np.abs(values).max() > 3.0e38:
        raise ValueError(f"{where}: a value is beyond float32's range, where the index keeps its weights")
    return vector


def _numbers(items: Any) -> np.ndarray | None:
    """ITEMS as a 1-D numpy array, or None when they are no flat list of numbers (all bools make a bool array, which
    the caller refuses by its dtype)."""
    try:
        array = np.asarray(items)
    except (ValueError, TypeError):
        return None
    return array if array.ndim == 1 else None


def document_vector(document: Any, position: int) -> SparseEmbedding:
    """The checked ``sparse_embedding`` of ``documents[position]``; a document without one, or with a negative
    weight, is refused: SPLADE-style weights are log(1 + relu(x)), never negative, and the index's pruning-free
    scores (and the guide's promise of 0 for no shared term as the least) assume none is."""
    where = f"documents[{position}] (id {document.id!r}).sparse_embedding"
    if document.sparse_embedding is None:
        raise ValueError(
            f"{where} is missing: embed the documents with a sparse document embedder "
            "(SentenceTransformersSparseDocumentEmbedder, TEISparseDocumentEmbedder) before writing them"
        )
    vector = check_sparse(document.sparse_embedding, where)
    if len(vector.values) and min(vector.values) < 0:
        raise ValueError(f"{where}: weight {min(vector.values)} is negative; a learned sparse weight is >= 0")
    return vector
