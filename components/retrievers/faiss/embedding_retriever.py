"""FAISSEmbeddingRetriever: dense retrieval of one query from a FAISSDocumentStore."""

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from haystack import Document, component
from haystack.document_stores.types import FilterPolicy

from components.retrievers.embedding_runs import SingleEmbeddingRuns
from components.retrievers.retriever_common import StoreRetrieverBase
from components.stores.faiss.document_store import FAISSDocumentStore

T = TypeVar("T")


def query_matrix(embeddings: list[list[float]] | np.ndarray, name: str) -> np.ndarray:
    """Stack query embeddings into a float32 (Q, dim) matrix; ValueError naming the first ragged one."""
    if isinstance(embeddings, np.ndarray):
        if embeddings.ndim != 2 or not embeddings.shape[1]:
            raise ValueError(f"{name} must be a (queries, dim) array with dim >= 1, got shape {embeddings.shape}")
        if embeddings.dtype.kind not in "iufcm":  # np.issubdtype(dtype, np.number), at a tenth of its cost per query
            raise ValueError(f"{name} must hold numbers only, got dtype {embeddings.dtype}")
        return embeddings.astype(np.float32, copy=False)
    for position, embedding in enumerate(embeddings):
        if len(embedding) != len(embeddings[0]) or not len(embedding):
            raise ValueError(
                f"{name}[{position}] has {len(embedding)} values, expected {len(embeddings[0])} like {name}[0] (>= 1)"
            )
    try:
        return np.asarray(embeddings, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numbers only ({exc})") from exc


class FAISSRetrieverBase(StoreRetrieverBase[FAISSDocumentStore]):
    """What the single and batch FAISS retrievers share: their store, checks, ``return_embedding`` and
    ``score_threshold``."""

    _store_type = FAISSDocumentStore
    _extra_init_parameters = ("return_embedding",)

    def __init__(
        self,
        document_store: FAISSDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
        score_threshold: float | None = None,
    ) -> None:
        """
        :param document_store: the FAISSDocumentStore to search.
        :param filters: Haystack filters applied to every query.
        :param top_k: documents per query, in [1, 10000].
        :param filter_policy: REPLACE (run-time filters, when given, replace the init filters) or MERGE (Haystack's
            merge: both apply, except that a run-time condition on a field the init filters name replaces that
            condition, and the init filters are dropped when the top-level operators differ).
        :param return_embedding: return the documents' stored embeddings too.
        :param score_threshold: drop hits scoring below it (the store's metric: cosine or inner product, or the
            negated squared L2 distance); None keeps every hit.
        :raises ValueError: if ``document_store`` is not a FAISSDocumentStore, ``top_k`` is out of range or
            ``score_threshold`` is not None or a finite number.
        :raises FilterError: if ``filters`` are not in Haystack's filter syntax.
        """
        self._set_common(document_store, filters, top_k, filter_policy, score_threshold)
        self.return_embedding = return_embedding

    def _search_embeddings(
        self, embeddings: list[list[float]] | np.ndarray, name: str, filters: dict[str, Any] | None, top_k: int | None
    ) -> list[list[Document]]:
        """
        One FAISS call for all query embeddings, with this run's filters and top_k.

        :param name: the run parameter the embeddings came from, named in errors.
        :returns: one best-first list per embedding, in order (none for no embeddings).
        """

        def search(queries: np.ndarray, k: int, run_filters: dict[str, Any] | None) -> list[list[Document]]:
            return self.document_store.search(queries, k, filters=run_filters, return_embedding=self.return_embedding)

        return self._searched(embeddings, name, filters, top_k, search)

    def _searched(
        self,
        embeddings: list[list[float]] | np.ndarray,
        name: str,
        filters: dict[str, Any] | None,
        top_k: int | None,
        search: Callable[[np.ndarray, int, dict[str, Any] | None], list[T]],
    ) -> list[T]:
        """``search(query matrix, top_k, filters)`` with this run's filters and top_k; [] for no embeddings."""
        filters, top_k = self._run_settings(filters, top_k)
        if not len(embeddings):
            return []
        return search(query_matrix(embeddings, name), top_k, filters)


@component
class FAISSEmbeddingRetriever(FAISSRetrieverBase, SingleEmbeddingRuns):
    """
    Retrieves the documents nearest to a query embedding from a FAISSDocumentStore.

    Scores are the store's: inner product, cosine similarity, or negated squared L2 distance (higher is
    better). Metadata filters are applied inside FAISS, so a selective filter still yields ``top_k`` hits;
    ``score_threshold`` drops the hits scoring below it.
    Every document carries ``meta["retrieval_type"] = "dense"``.

    ```python
    store = FAISSDocumentStore(path="index_dir")
    retriever = FAISSEmbeddingRetriever(store, top_k=5)
    retriever.run(query_embedding=text_embedder.run("what is FAISS?")["embedding"])["documents"]
    ```
    """
