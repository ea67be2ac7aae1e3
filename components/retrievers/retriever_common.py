"""The settings every retriever here shares, checked, held and serialised in one place.

Each BM25, FAISS and Milvus retriever takes a typed document store, default ``filters``, a default ``top_k``, a
``filter_policy`` and a ``score_threshold``, applies the same run-time overrides, and serialises these (the store
through its own ``to_dict``). ``top_k``, filters and the threshold (init and run-time) go through the shared checks
of ``components.checks``, so every retriever refuses the same bad value with the same ValueError/FilterError as the
stores and rankers; the threshold's filter is ``components.score_threshold``'s. The
families differ only in the store class, the exception a wrong store raises and a few extra init parameters,
which a subclass declares as class attributes.
"""

from typing import Any, ClassVar, Generic, Self, TypeVar

from haystack import default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy, apply_filter_policy

from components.checks import check_filters, check_score_threshold, check_top_k
from components.score_threshold import run_threshold

StoreT = TypeVar("StoreT")


class StoreRetrieverBase(Generic[StoreT]):
    """
    Base of the retrievers: store/filters/top_k/filter_policy handling and ``to_dict``/``from_dict``.

    Parametrised by the store class (``StoreRetrieverBase[BM25DocumentStore]``). A subclass sets ``_store_type``,
    ``_store_error`` (kept per family so that callers' ``except`` clauses still match) and
    ``_extra_init_parameters`` (names of its other init parameters, each also an attribute). It keeps its own
    ``__init__`` (Haystack reads the init signature) and calls ``_set_common`` there; ``@component`` still
    decorates the concrete class.
    """

    _store_type: ClassVar[type]
    _store_error: ClassVar[type[Exception]] = ValueError
    _extra_init_parameters: ClassVar[tuple[str, ...]] = ()
    document_store: StoreT

    def _set_common(
        self,
        document_store: StoreT,
        filters: dict[str, Any] | None,
        top_k: int,
        filter_policy: FilterPolicy | str,
        score_threshold: float | None,
    ) -> None:
        """Check the store's type, ``top_k``, ``filters`` and ``score_threshold``, then keep the settings (a policy
        may come as its name)."""
        if not isinstance(document_store, self._store_type):
            raise self._store_error(
                f"document_store must be a {self._store_type.__name__}, got {type(document_store).__name__}"
            )
        check_top_k(top_k)
        check_filters(filters)
        self.score_threshold = check_score_threshold(score_threshold)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.filter_policy = FilterPolicy.from_str(filter_policy) if isinstance(filter_policy, str) else filter_policy

    def _run_settings(self, filters: dict[str, Any] | None, top_k: int | None) -> tuple[dict[str, Any] | None, int]:
        """The filters (init and run-time combined by ``filter_policy``) and the checked ``top_k`` for one run."""
        top_k = self.top_k if top_k is None else check_top_k(top_k)
        check_filters(filters)
        return apply_filter_policy(self.filter_policy, self.filters, filters), top_k

    def _run_threshold(self, score_threshold: float | None) -> float | None:
        """The minimum score of one run: the run-time one if given (checked), else the init one (None: none)."""
        return run_threshold(self.score_threshold, score_threshold)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the retriever and its store's configuration."""
        extras = {name: getattr(self, name) for name in self._extra_init_parameters}
        return default_to_dict(
            self,
            document_store=self.document_store,
            filters=self.filters,
            top_k=self.top_k,
            filter_policy=self.filter_policy.value,
            score_threshold=self.score_threshold,
            **extras,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild the retriever (and its store) from ``to_dict`` output; the caller's dict is left as it was."""
        return default_from_dict(cls, data)
