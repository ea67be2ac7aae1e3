"""FAISSEmbeddingRetriever: dense retrieval of one query from a FAISSDocumentStore."""

import asyncio
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy

from components.stores.faiss_document_store import FAISSDocumentStore


def check_store(document_store: Any) -> None:
    """Raise ValueError unless ``document_store`` is a FAISSDocumentStore."""
    if not isinstance(document_store, FAISSDocumentStore):
        raise ValueError(f"document_store must be a FAISSDocumentStore, got {type(document_store).__name__}")


def check_top_k(top_k: Any) -> None:
    """Raise ValueError unless ``top_k`` is an integer >= 1."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")


def query_matrix(embeddings: list[list[float]], name: str) -> np.ndarray:
    """Stack query embeddings into a float32 (Q, dim) matrix; ValueError naming the first ragged one."""
    for position, embedding in enumerate(embeddings):
        if len(embedding) != len(embeddings[0]) or not len(embedding):
            raise ValueError(
                f"{name}[{position}] has {len(embedding)} values, expected {len(embeddings[0])} like {name}[0] (>= 1)"
            )
    try:
        return np.asarray(embeddings, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numbers only ({exc})") from exc


def serialize(retriever: Any) -> dict[str, Any]:
    """``to_dict`` shared by the FAISS retrievers (the store is serialised with its own ``to_dict``)."""
    return default_to_dict(
        retriever,
        document_store=retriever.document_store,
        filters=retriever.filters,
        top_k=retriever.top_k,
        filter_policy=retriever.filter_policy.value,
        return_embedding=retriever.return_embedding,
    )


def deserialize(cls: type, data: dict[str, Any]) -> Any:
    """``from_dict`` shared by the FAISS retrievers."""
    init_parameters = dict(data.get("init_parameters", {}))  # a copy: the caller's dict stays serialised
    if "filter_policy" in init_parameters:
        init_parameters["filter_policy"] = FilterPolicy.from_str(init_parameters["filter_policy"])
    return default_from_dict(cls, {**data, "init_parameters": init_parameters})


@component
class FAISSEmbeddingRetriever:
    """
    Retrieves the documents nearest to a query embedding from a FAISSDocumentStore.

    Scores are the store's: inner product, cosine similarity, or negated squared L2 distance (higher is
    better). Metadata filters are applied inside FAISS, so a selective filter still yields ``top_k`` hits.
    Every document carries ``meta["retrieval_type"] = "dense"``.

    ```python
    store = FAISSDocumentStore(path="index_dir")
    retriever = FAISSEmbeddingRetriever(store, top_k=5)
    retriever.run(query_embedding=text_embedder.run("what is FAISS?")["embedding"])["documents"]
    ```
    """

    def __init__(
        self,
        document_store: FAISSDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: FilterPolicy = FilterPolicy.REPLACE,
        return_embedding: bool = False,
    ) -> None:
        """
        :param document_store: the FAISSDocumentStore to search.
        :param filters: Haystack filters applied to every query.
        :param top_k: documents per query, at least 1.
        :param filter_policy: REPLACE (run-time filters replace init filters) or MERGE (both apply).
        :param return_embedding: return the documents' stored embeddings too.
        """
        check_store(document_store)
        check_top_k(top_k)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = FilterPolicy.from_str(filter_policy) if isinstance(filter_policy, str) else filter_policy
        self.return_embedding = return_embedding

    def to_dict(self) -> dict[str, Any]:
        """Serialise the retriever and its store's settings."""
        return serialize(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FAISSEmbeddingRetriever":
        """Rebuild the retriever (and its store) from ``to_dict`` output."""
        return deserialize(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, query_embedding: list[float], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """
        Retrieve the documents nearest to ``query_embedding``.

        :param query_embedding: the query's embedding, as long as the store's vectors.
        :param filters: Haystack filters, combined with the init filters by ``filter_policy``.
        :param top_k: overrides the init ``top_k`` (at least 1).
        :returns: ``{"documents": [...]}``, best first, at most ``top_k``.
        """
        top_k = self.top_k if top_k is None else top_k
        check_top_k(top_k)
        queries = query_matrix([query_embedding], "query_embedding")
        filters = apply_filter_policy(self.filter_policy, self.filters, filters)
        found = self.document_store.search(queries, top_k, filters=filters, return_embedding=self.return_embedding)
        return {"documents": found[0]}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query_embedding: list[float], filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """Same as ``run``, in a worker thread so that the event loop keeps serving other requests."""
        return await asyncio.to_thread(self.run, query_embedding=query_embedding, filters=filters, top_k=top_k)
