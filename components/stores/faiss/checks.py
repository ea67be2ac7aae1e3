"""Input checks of the FAISS document store: each error names the parameter, document, file or row at fault."""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from haystack.document_stores.errors import DocumentStoreError

from components.stores.faiss.vector_index import METRICS, build_faiss_index

FORMAT = "needle-faiss-store/1"  # every embedding a blob in the document table (``saved_generations``)
FORMAT_IN_INDEX = "needle-faiss-store/2"  # an exact Flat index's: the table's rows read their vectors from it
_PROBE_DIMS = (384, 768, 1024, 96)  # dims tried to validate index_factory before the real dim is known
# Search / build parameters that FAISS takes as counts; FAISS itself accepts 0 or -1 silently and then misbehaves.
_COUNT_PARAMS = ("nprobe", "efSearch", "efConstruction")
_MANIFEST_KEYS = ("format", "metric", "index_factory", "embedding_dim", "next_row", "documents", "vectors", "info")


def check_init(
    path: Any,
    metric: Any,
    index_factory: Any,
    embedding_dim: Any,
    index_chunk_size: Any,
    search_params: Any,
) -> None:
    """Raise ValueError naming the first bad init parameter of FAISSDocumentStore and its allowed values."""
    if path is not None and (not isinstance(path, str | Path) or not str(path)):
        raise ValueError(f"path must be a directory path or None, got {path!r}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if embedding_dim is not None and (not isinstance(embedding_dim, int) or embedding_dim < 1):
        raise ValueError(f"embedding_dim must be an integer >= 1 or None, got {embedding_dim!r}")
    if not isinstance(index_chunk_size, int) or index_chunk_size < 1:
        raise ValueError(f"index_chunk_size must be an integer >= 1, got {index_chunk_size!r}")
    if search_params is not None and not isinstance(search_params, dict):
        raise ValueError(f"search_params must be a dict like {{'nprobe': 16}} or None, got {search_params!r}")
    for name in _COUNT_PARAMS:
        value = (search_params or {}).get(name, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"search_params[{name!r}] must be an integer >= 1, got {value!r}")
    if not isinstance(index_factory, str) or not index_factory.strip() or "IDMap" in index_factory:
        raise ValueError(
            "index_factory must be a FAISS factory string without IDMap (the store adds it), "
            f"e.g. 'Flat', 'HNSW32', 'IVF100,Flat'; got {index_factory!r}"
        )
    errors = []
    for dim in (embedding_dim,) if embedding_dim else _PROBE_DIMS:
        try:
            index = build_faiss_index(dim, metric, index_factory, search_params)
        except RuntimeError as exc:
            errors.append(str(exc).strip().splitlines()[-1])
            continue
        try:
            index.add_with_ids(np.empty((0, dim), np.float32), np.empty(0, np.int64))
        except RuntimeError as exc:  # an untrained index refuses adds for that reason, which is fine
            if "not implemented" in str(exc):
                raise ValueError(f"index_factory={index_factory!r}: this FAISS index cannot store ids") from exc
        return
    raise ValueError(
        f"index_factory={index_factory!r} / search_params={search_params!r} rejected by FAISS: {errors[0]}"
    )


def check_finite(matrix: np.ndarray, name_of: Callable[[int], str]) -> None:
    """Raise ValueError naming (through ``name_of(row)``) the first row of ``matrix`` holding NaN or infinity."""
    if np.isfinite(matrix).all():
        return
    row = int(np.argmin(np.isfinite(matrix).all(axis=1)))
    raise ValueError(f"{name_of(row)}: embedding holds NaN or infinite values")


def stack_embeddings(documents: Sequence[Document], dim: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The documents' embeddings as one float32 matrix, and per document its row there (-1: no embedding)."""
    vector_of = np.full(len(documents), -1, dtype=np.int64)
    embeddings: list[list[float]] = []
    for position, document in enumerate(documents):
        if document.embedding is None:
            continue
        dim = dim or len(document.embedding)
        if len(document.embedding) != dim or dim == 0:
            raise ValueError(
                f"Document '{document.id}' (documents[{position}]): embedding has {len(document.embedding)} "
                f"values, this store holds vectors of embedding_dim={dim}"
            )
        vector_of[position] = len(embeddings)
        embeddings.append(document.embedding)
    try:
        matrix = np.array(embeddings, dtype=np.float32).reshape(len(embeddings), dim or 0)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"write_documents: embeddings must be lists of numbers ({exc})") from exc
    names = [f"Document '{d.id}' (documents[{i}])" for i, d in enumerate(documents) if d.embedding is not None]
    check_finite(matrix, lambda row: names[row])
    return matrix, vector_of


def check_matrix(matrix: Any, count: int, dim: int | None, source: str) -> None:
    """A float (count, dim) array, one row per document; ``source`` names it in errors (a .npy path)."""
    if not isinstance(matrix, np.ndarray) or matrix.ndim != 2 or matrix.dtype.kind != "f":
        found = f"{matrix.dtype} {matrix.shape}" if isinstance(matrix, np.ndarray) else type(matrix).__name__
        raise ValueError(f"{source}: expected a float32 (N, dim) array, got {found}")
    if matrix.shape[0] != count:
        raise ValueError(f"{source}: {matrix.shape[0]} rows, expected one per document ({count})")
    if dim not in (None, matrix.shape[1]):
        raise ValueError(f"{source}: vectors of {matrix.shape[1]} values, this store has embedding_dim={dim}")


def check_query_embeddings(query_embeddings: Any, dim: int | None) -> np.ndarray:
    """Query embeddings as a finite float32 (Q, dim) matrix."""
    try:
        queries = np.asarray(query_embeddings, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"query_embeddings must be a (Q, dim) array of numbers ({exc})") from exc
    if queries.ndim != 2 or queries.shape[1] == 0:
        raise ValueError(f"query_embeddings must be a (Q, dim) array, got shape {queries.shape}")
    if dim is not None and queries.shape[1] != dim:
        raise ValueError(f"query embeddings have {queries.shape[1]} values, this store has embedding_dim={dim}")
    check_finite(queries, lambda row: f"query_embeddings[{row}]")
    return queries


def check_manifest(manifest: dict[str, Any], path: Path, settings: dict[str, Any]) -> None:
    """
    Check a saved store's manifest: format, the type and range of every field (a tampered file is refused
    before anything in it is used), and that its settings match the ones of the store opening it.
    """
    if manifest.get("format") not in (FORMAT, FORMAT_IN_INDEX) or any(key not in manifest for key in _MANIFEST_KEYS):
        raise DocumentStoreError(f"{path}: not a {FORMAT} or {FORMAT_IN_INDEX} manifest")
    counts = {name: manifest[name] for name in ("next_row", "documents", "embedding_dim", "vectors")}
    problems = {
        "metric": manifest["metric"] not in METRICS,
        "index_factory": not isinstance(manifest["index_factory"], str),
        "info": not isinstance(manifest["info"], dict),
        **{
            name: (value is not None or name in ("next_row", "documents"))
            and (isinstance(value, bool) or not isinstance(value, int) or value < 0)
            for name, value in counts.items()
        },
    }
    for name, bad in problems.items():
        if bad:
            raise DocumentStoreError(
                f"{path}: field {name!r} is {manifest[name]!r}"[:300] + ", which this store never writes"
            )
    for name, given in settings.items():
        if given is not None and manifest[name] is not None and given != manifest[name]:
            raise ValueError(
                f"{path}: the store was built with {name}={manifest[name]!r} but this FAISSDocumentStore has "
                f"{name}={given!r}; open it with FAISSDocumentStore.load(path)"
            )
