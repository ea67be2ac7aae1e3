"""The Milvus store's settings (UltraRAG's ``index_backend_configs.milvus``), checked once at init.

Every setting is a JSON-able value, so a store serialises to YAML and back unchanged; each bad value is a
ValueError naming the setting and what it allows. The BM25 analyzer is chosen by name (``english``,
``chinese``, ``standard``, or a language of Milvus's stemmer filter such as ``german``) or given as Milvus
``analyzer_params``, never as code.
"""

import re
from dataclasses import asdict, dataclass
from typing import Any

from components.checks import check_int
from components.stores.bm25.languages import STEMMED, stopwords

METRICS = ("IP", "COSINE", "L2")
LITE_SUFFIX = ".db"
REMOTE_SCHEMES = ("http://", "https://", "tcp://", "unix:")
MAX_VARCHAR = 65_535
MAX_DIM = 32_768  # Milvus's largest FLOAT_VECTOR dimension
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
CONSISTENCY_LEVELS = ("Strong", "Session", "Bounded", "Eventually")
MAX_PARTITIONS = 1024  # Milvus's default rootCoord.maxPartitionNum: the most num_partitions a partition key takes
EMBEDDED_FIELD = "_has_embedding"  # BOOL: the row's vector is the document's embedding (else a placeholder)

# English stop words (Lucene's list, which Milvus's "english" analyzer also drops).
ENGLISH_STOP_WORDS = [
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "but",
    "by",
    "for",
    "if",
    "in",
    "into",
    "is",
    "it",
    "no",
    "not",
    "of",
    "on",
    "or",
    "such",
    "that",
    "the",
    "their",
    "then",
    "there",
    "these",
    "they",
    "this",
    "to",
    "was",
    "will",
    "with",
]

# Lowercase, stem (Snowball English) and drop stop words on a Milvus server. Milvus Lite's standard tokenizer
# splits on \w+, lowercases and applies the stop filter but ignores the stemmer, so the same settings run
# there without stemming (``MilvusDocumentStore.bm25_analyzer_in_use`` says which one ran).
ANALYZERS: dict[str, dict[str, Any]] = {
    "english": {
        "tokenizer": "standard",
        "filter": [
            "lowercase",
            {"type": "stop", "stop_words": ENGLISH_STOP_WORDS},
            {"type": "stemmer", "language": "english"},
        ],
    },
    "chinese": {"tokenizer": "jieba"},
    "standard": {"tokenizer": "standard", "filter": ["lowercase"]},
}
MILVUS_STEMMERS = (
    "arabic", "danish", "dutch", "english", "finnish", "french", "german", "greek", "hungarian", "italian",
    "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "tamil", "turkish",
)  # fmt: skip
"""The languages of Milvus's ``stemmer`` filter (Milvus 2.5+). Each but English (its own preset above) is a preset
of the same name: lowercase, the BM25 store's stop list of that language (bm25s'; none where bm25s has none)
and that stemmer: close to the BM25 store's terms, not identical (Milvus's standard tokenizer keeps one-character
and numeric tokens, lowercases rather than case-folds, and its Snowball release may stem some words otherwise).
Milvus Lite drops the stop words but ignores the stemmer, as for English."""
LANGUAGE_PRESETS = tuple(name for name in MILVUS_STEMMERS if name != "english")
_CODE_OF = {language.name: code for code, language in STEMMED.items()}


def language_analyzer(name: str) -> dict[str, Any]:
    """The ``analyzer_params`` of the language preset NAME (one of ``LANGUAGE_PRESETS``)."""
    stop = sorted(stopwords(_CODE_OF[name]))
    filters: list[Any] = ["lowercase"]
    if stop:
        filters.append({"type": "stop", "stop_words": stop})
    filters.append({"type": "stemmer", "language": name})
    return {"tokenizer": "standard", "filter": filters}


def is_lite(uri: str) -> bool:
    """Whether ``uri`` names a Milvus Lite database on this machine (a local path) rather than a server."""
    return not uri.startswith(REMOTE_SCHEMES)


@dataclass(frozen=True)
class MilvusSettings:
    """Where the collection lives, its field names and limits, and how it is indexed and searched."""

    uri: str = "milvus.db"
    collection_name: str = "needle"
    id_field_name: str = "id"
    vector_field_name: str = "vector"
    text_field_name: str = "contents"
    sparse_field_name: str = "sparse"
    embedding_dim: int | None = None
    id_max_length: int = 64
    text_max_length: int = 60_000
    metric_type: str = "IP"
    index_params: dict[str, Any] | None = None
    search_params: dict[str, Any] | None = None
    index_chunk_size: int = 1000
    bm25: bool = True
    bm25_analyzer: str | dict[str, Any] = "english"
    consistency_level: str = "Session"
    timeout: float = 30.0
    partition_key_field: str | None = None
    num_partitions: int | None = None
    learned_sparse_field_name: str | None = None

    def __post_init__(self) -> None:
        """Refuse a bad value at init, naming the setting and its allowed values."""
        self._check_uri()
        for name in ("collection_name", "id_field_name", "vector_field_name", "text_field_name", "sparse_field_name"):
            _check_name(name, getattr(self, name))
        self._check_optional_fields()
        if self.embedding_dim is not None:
            check_int("embedding_dim", self.embedding_dim, 1, MAX_DIM)
        check_int("id_max_length", self.id_max_length, 1, MAX_VARCHAR)
        check_int("text_max_length", self.text_max_length, 1, MAX_VARCHAR)
        check_int("index_chunk_size", self.index_chunk_size, 1, 100_000)
        if self.metric_type not in METRICS:
            raise ValueError(f"metric_type must be one of {', '.join(METRICS)}, got {self.metric_type!r}")
        if self.consistency_level not in CONSISTENCY_LEVELS:
            raise ValueError(f"consistency_level must be one of {', '.join(CONSISTENCY_LEVELS)}")
        for name in ("index_params", "search_params"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"{name} must be a dict of Milvus index/search parameters or None")
        self._check_index_metric()
        self._check_analyzer()
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) or not 0 < self.timeout <= 3600:
            raise ValueError(f"timeout must be a number of seconds in (0, 3600], got {self.timeout!r}")

    def _check_optional_fields(self) -> None:
        """The tenant (partition key) and learned sparse fields: valid names, each field name different."""
        key = self.partition_key_field
        if isinstance(key, str) and key.startswith("meta."):
            raise ValueError(
                f"partition_key_field names the meta key itself: {key.removeprefix('meta.')!r} for {key}, got {key!r}"
            )
        for name in ("partition_key_field", "learned_sparse_field_name"):
            if getattr(self, name) is not None:
                _check_name(name, getattr(self, name))
        if self.num_partitions is not None:
            if key is None:
                raise ValueError("num_partitions needs partition_key_field (the partitions are the tenants' buckets)")
            check_int("num_partitions", self.num_partitions, 1, MAX_PARTITIONS)
        fields = [self.id_field_name, self.vector_field_name, self.text_field_name, self.sparse_field_name]
        fields += [name for name in (key, self.learned_sparse_field_name) if name is not None]
        if len(set(fields)) != len(fields) or EMBEDDED_FIELD in fields:
            raise ValueError(
                f"id, vector, text, sparse, partition key and learned sparse field names must differ, from each other "
                f"and from {EMBEDDED_FIELD!r} (the store's own field), got {fields}"
            )

    def _check_uri(self) -> None:
        if not isinstance(self.uri, str) or not self.uri.strip():
            raise ValueError("uri must be a local path ending in .db (Milvus Lite) or http://host:port (a server)")
        if is_lite(self.uri) and not self.uri.endswith(LITE_SUFFIX):
            raise ValueError(
                f"uri {self.uri!r}: a Milvus Lite database is a local path ending in {LITE_SUFFIX!r} "
                f"(e.g. 'index/milvus.db'); a server is http://host:port"
            )

    def _check_index_metric(self) -> None:
        given = (self.index_params or {}).get("metric_type")
        if given is not None and given != self.metric_type:
            raise ValueError(
                f"index_params metric_type {given!r} differs from metric_type {self.metric_type!r}; set metric_type"
            )

    def _check_analyzer(self) -> None:
        """Refuse a ``bm25_analyzer`` that is neither a preset name nor a dict (a language preset's stop list is
        read only when the collection is built: bm25s takes a third of a second to import)."""
        if not isinstance(self.bm25_analyzer, dict) and self.bm25_analyzer not in (*ANALYZERS, *LANGUAGE_PRESETS):
            raise ValueError(
                f"bm25_analyzer must be one of {', '.join((*ANALYZERS, *LANGUAGE_PRESETS))} or a dict of Milvus "
                f"analyzer_params, got {self.bm25_analyzer!r}"
            )

    def analyzer_params(self) -> dict[str, Any]:
        """The Milvus ``analyzer_params`` of the BM25 text field, from a preset name or given as a dict."""
        self._check_analyzer()
        if isinstance(self.bm25_analyzer, dict):
            return dict(self.bm25_analyzer)
        if self.bm25_analyzer in LANGUAGE_PRESETS:
            return language_analyzer(self.bm25_analyzer)
        return ANALYZERS[self.bm25_analyzer]

    def stems(self) -> bool:
        """Whether the BM25 analyzer asks for stemming (a ``stemmer`` filter, or Milvus's ``english`` type): what a
        Milvus server applies and Milvus Lite ignores."""
        params = self.analyzer_params()
        filters = params.get("filter", [])
        stemmer = isinstance(filters, list) and any(isinstance(f, dict) and f.get("type") == "stemmer" for f in filters)
        return stemmer or params.get("type") == "english"

    def dense_index(self) -> dict[str, Any]:
        """The dense field's index: AUTOINDEX with ``metric_type`` unless ``index_params`` says otherwise."""
        return {"index_type": "AUTOINDEX", "params": {}, **(self.index_params or {}), "metric_type": self.metric_type}

    def dense_search(self) -> dict[str, Any]:
        """The dense search parameters, always with the index's metric."""
        return {"params": {}, **(self.search_params or {}), "metric_type": self.metric_type}

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON-able init parameters."""
        return asdict(self)


def _check_name(setting: str, value: Any) -> None:
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
        raise ValueError(
            f"{setting} must start with a letter or '_' and hold only letters, digits and '_' "
            f"(at most 255), got {value!r}"
        )
