"""What every Milvus retriever shares: its store, checked settings (``score_threshold`` too), run-time overrides, the
pinned ``tenant``, and warm_up.

The single-query and batch retrievers of each mode (dense, BM25, learned sparse, Milvus hybrid) differ only in their
sockets: each run makes one Milvus call with every query of the batch (nq > 1), and ``run_async`` runs it in a worker
thread so that the event loop (Hayhooks, AsyncPipeline) keeps serving.

Init ``filters`` do not keep a retriever inside one tenant: Haystack's ``filter_policy`` REPLACE (the default) drops
them whenever run-time filters are given, and MERGE drops an init condition on a field the run-time filters also
name, or all of them when the two sides have different top-level operators (an ``OR`` at run time, say). ``tenant``
is ANDed with whatever filters the policy gives, on every run, so no run-time filter reaches another tenant.
"""

import math
from typing import Any, ClassVar

from haystack import Document
from haystack.dataclasses.sparse_embedding import SparseEmbedding
from haystack.document_stores.types import FilterPolicy

from components.retrievers.retriever_common import StoreRetrieverBase
from components.stores.milvus.document_store import MilvusDocumentStore
from components.stores.milvus.records import check_tenant


class MilvusRetrieverBase(StoreRetrieverBase[MilvusDocumentStore]):
    """A retriever over a MilvusDocumentStore: ``document_store``, ``filters``, ``top_k``, ``filter_policy``,
    ``score_threshold``."""

    _store_type = MilvusDocumentStore
    _extra_init_parameters: ClassVar[tuple[str, ...]] = ("tenant",)

    def __init__(
        self,
        document_store: MilvusDocumentStore,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        filter_policy: FilterPolicy = FilterPolicy.REPLACE,
        score_threshold: float | None = None,
        tenant: str | None = None,
    ) -> None:
        """
        :param document_store: the MilvusDocumentStore to search.
        :param filters: Haystack filters applied to every query, combined with run-time filters by ``filter_policy``.
        :param top_k: documents per query, in [1, 10000].
        :param filter_policy: REPLACE (run-time filters, when given, replace the init filters) or MERGE (Haystack's
            merge: both apply, except that a run-time condition on a field the init filters name replaces that
            condition, and the init filters are dropped when the top-level operators differ). Neither pins a
            tenant: use ``tenant``.
        :param score_threshold: drop hits scoring below it (higher is better: the metric's similarity, the BM25
            score, or the fused score of a hybrid search); None keeps every hit.
        :param tenant: search only this tenant's documents (the value of the store's ``partition_key_field``),
            ANDed with every run's filters whatever the policy; None: no tenant is pinned.
        :raises ValueError: if ``document_store`` is not a MilvusDocumentStore, ``top_k`` is out of range,
            ``score_threshold`` is not None or a finite number, or ``tenant`` is given for a store without
            ``partition_key_field`` or is not a tenant Milvus stores.
        :raises FilterError: if ``filters`` are not in Haystack's filter syntax.
        """
        self._set_common(document_store, filters, top_k, filter_policy, score_threshold)
        self.tenant = self._checked_tenant(tenant)

    def _checked_tenant(self, tenant: str | None) -> str | None:
        """``tenant`` if the store has tenants and it is one the store could hold."""
        if tenant is None:
            return None
        key = self.document_store.settings.partition_key_field
        if key is None:
            raise ValueError(
                f"tenant {tenant!r:.60}: the store has no partition_key_field, so its documents have no tenant; "
                f"set partition_key_field on the MilvusDocumentStore (a new collection), or leave tenant unset"
            )
        return check_tenant(tenant, key, "tenant")

    def _run_settings(self, filters: dict[str, Any] | None, top_k: int | None) -> tuple[dict[str, Any] | None, int]:
        """The run's filters by ``filter_policy``, ANDed with the pinned ``tenant``, and the run's ``top_k``."""
        combined, top_k = super()._run_settings(filters, top_k)
        key = self.document_store.settings.partition_key_field
        if self.tenant is None or key is None:
            return combined, top_k
        pinned = {"field": f"meta.{key}", "operator": "==", "value": self.tenant}
        return (pinned if not combined else {"operator": "AND", "conditions": [pinned, combined]}), top_k

    def warm_up(self) -> None:
        """Connect to Milvus and load the collection (idempotent): the first query pays no connection cost."""
        self.document_store.warm_up()


def checked_embeddings(embeddings: Any, name: str, dim: int | None) -> list[list[float]]:
    """
    The query embeddings as lists of floats, each as long as the collection's vectors.

    :raises ValueError: naming the first embedding that is not a list of numbers or has another length.
    """
    if not isinstance(embeddings, list):
        raise ValueError(f"{name} must be a list of embeddings, got {type(embeddings).__name__}")
    expected = dim if dim is not None else (len(embeddings[0]) if embeddings and isinstance(embeddings[0], list) else 0)
    checked = []
    for position, embedding in enumerate(embeddings):
        label = f"{name}[{position}]" if name.endswith("s") else name  # a single retriever's one query_embedding
        if not isinstance(embedding, list) or not all(_is_number(value) for value in embedding):
            raise ValueError(f"{label} must be a list of finite numbers")
        if len(embedding) != expected or not embedding:
            raise ValueError(f"{label} has {len(embedding)} values; the collection's vectors have {expected or '>= 1'}")
        checked.append([float(value) for value in embedding])
    return checked


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def checked_sparse(queries: Any, name: str) -> list[SparseEmbedding]:
    """
    The query sparse embeddings of a run (``name``: its parameter), each a haystack SparseEmbedding.

    :raises ValueError: naming the parameter (and position) that is not one; the store checks term ids and weights.
    """
    single = not name.endswith("s")
    listed = [queries] if single else queries
    if not isinstance(listed, list):
        raise ValueError(f"{name} must be a list of SparseEmbedding, got {type(queries).__name__}")
    for position, query in enumerate(listed):
        if not isinstance(query, SparseEmbedding):
            label = name if single else f"{name}[{position}]"
            raise ValueError(f"{label} must be a haystack SparseEmbedding, got {type(query).__name__}")
    return listed


class MilvusSearches(MilvusRetrieverBase):
    """The four kinds of Milvus search, for whole batches, with this run's filters and ``top_k``."""

    def _search_embeddings(
        self, embeddings: Any, name: str, filters: dict[str, Any] | None, top_k: int | None
    ) -> list[list[Document]]:
        filters, top_k = self._run_settings(filters, top_k)
        store = self.document_store
        store.warm_up()
        return store.embedding_search(checked_embeddings(embeddings, name, store.dim), top_k, filters)

    def _bm25(self, queries: list[str], filters: dict[str, Any] | None, top_k: int | None) -> list[list[Document]]:
        filters, top_k = self._run_settings(filters, top_k)
        return self.document_store.bm25_search(queries, top_k, filters)

    def _sparse(
        self, queries: list[SparseEmbedding], filters: dict[str, Any] | None, top_k: int | None
    ) -> list[list[Document]]:
        filters, top_k = self._run_settings(filters, top_k)
        return self.document_store.sparse_embedding_search(queries, top_k, filters)
