"""Checks of the BM25 store's parameters and queries, and reconciliation with a saved index's settings.

Every message names the parameter and its allowed range, so a bad YAML value or query is fixed in one go.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.scoring import METHODS
from components.stores.bm25.tokenizers import LANGUAGES, validate_tokenizer_settings

DEFAULTS: dict[str, Any] = {
    "lang": "en", "tokenizer": None, "method": "lucene", "k1": 0.9, "b": 0.4, "delta": 0.5, "document_store_path": None,
}
BACKENDS = ("numpy", "numba")
MAX_QUERY_CHARS = 1_048_576
_RANGES: dict[str, tuple[str, Callable[[float], bool]]] = {
    "k1": ("a number >= 0", lambda v: v >= 0),
    "b": ("a number in [0, 1]", lambda v: 0 <= v <= 1),
    "delta": ("a number >= 0", lambda v: v >= 0),
    "compaction_ratio": ("a number in (0, 1]", lambda v: 0 < v <= 1),
}


def validate_init(*, lang: str | None, tokenizer: str | None, method: str | None, k1: float | None, b: float | None,
                  delta: float | None, backend: str, compaction_ratio: float, path: str | None,
                  document_store_path: str | None, autosave: bool) -> None:
    """Raise ValueError naming the first parameter outside its allowed range."""
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}; got {lang!r}")
    validate_tokenizer_settings(lang or DEFAULTS["lang"], tokenizer)
    if method is not None and method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    for name, value in (("k1", k1), ("b", b), ("delta", delta)):
        _check_number(name, value)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    _check_number("compaction_ratio", compaction_ratio)
    for name, value in (("path", path), ("document_store_path", document_store_path)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"{name} must be a non-empty directory path string or None; got {value!r}")
    if not isinstance(autosave, bool):
        raise ValueError(f"autosave must be True or False; got {autosave!r}")


def _check_number(name: str, value: Any) -> None:
    """Check that ``value`` is None or a real number in the allowed range of parameter ``name``."""
    allowed, within = _RANGES[name]
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not within(value):
        raise ValueError(f"{name} must be {allowed}; got {value!r}")


def check_query(query: Any, name: str) -> None:
    """Refuse a query that is not a string or is longer than 1 MiB of characters."""
    if not isinstance(query, str):
        raise ValueError(f"{name} must be a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(
            f"{name} is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS:,} characters (1 MiB)"
        )


def check_top_k(top_k: Any) -> None:
    """Refuse a top_k that is not an integer >= 1."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1; got {top_k!r}")


def check_filters(filters: dict[str, Any] | None) -> None:
    """Reject a filter that is neither a condition nor a logical group before any document is scanned."""
    if filters and "operator" not in filters and "conditions" not in filters:
        raise ValueError("Invalid filter syntax: a filter needs 'operator' (and 'field'/'value' or 'conditions')")


def resolve_settings(
    given: dict[str, Any], manifest: dict[str, Any] | None, manifest_file: Path | None
) -> dict[str, Any]:
    """
    The settings to use: the saved index's where one exists, else the given values or the defaults.

    :raises ValueError: If an explicitly given value contradicts the saved index (naming both and the file).
    :raises DocumentStoreError: If the manifest's settings are themselves invalid.
    """
    if manifest is None:
        return {name: DEFAULTS[name] if value is None else value for name, value in given.items()}
    try:
        saved = {**manifest["tokenizer"], **manifest["bm25"], "document_store_path": manifest["document_store_path"]}
        validate_tokenizer_settings(saved["lang"], saved["tokenizer"])
    except (KeyError, TypeError, ValueError) as exc:
        raise DocumentStoreError(f"{manifest_file}: corrupted settings ({exc})") from exc
    for name, value in given.items():
        if value is not None and not _same(name, value, saved[name]):
            raise ValueError(
                f"{name}={value!r} contradicts the index saved in {manifest_file}, built with {name}={saved[name]!r}: "
                f"leave {name} unset to use the saved value, or save a new index to another path"
            )
    return saved


def _same(name: str, given: Any, saved: Any) -> bool:
    """Equal settings; paths compare after resolving, so './x' and 'x' agree."""
    if name == "document_store_path" and isinstance(given, str) and isinstance(saved, str):
        return Path(given).resolve() == Path(saved).resolve()
    return given == saved
