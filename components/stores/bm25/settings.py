"""Checks of the BM25 store's parameters, and of the settings a saved index's manifest records.

Every message names the parameter (or the manifest file and field) and its allowed range, so a bad YAML value
is fixed in one go and a tampered manifest is refused before anything in it is used. Queries, ``top_k`` and
filters are checked by ``components.checks``, the rules every store and retriever shares.
"""

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.languages import LANGUAGES
from components.stores.bm25.scoring import METHODS
from components.stores.bm25.tokenizers import (
    CUSTOM,
    SPLITTERS,
    TOKENIZERS,
    is_tokenizer_name,
    validate_tokenizer_settings,
)

DEFAULTS: dict[str, Any] = {
    "lang": "en",
    "tokenizer": None,
    "method": "lucene",
    "k1": 0.9,
    "b": 0.4,
    "delta": 0.5,
    "document_store_path": None,
}
BACKENDS = ("numpy", "numba")
_RANGES: dict[str, tuple[str, Callable[[float], bool]]] = {
    "k1": ("a number >= 0", lambda v: v >= 0),
    "b": ("a number in [0, 1]", lambda v: 0 <= v <= 1),
    "delta": ("a number >= 0", lambda v: v >= 0),
    "compaction_ratio": ("a number in (0, 1]", lambda v: 0 < v <= 1),
}


def validate_init(
    *,
    lang: Any,
    tokenizer: Any,
    method: Any,
    k1: Any,
    b: Any,
    delta: Any,
    backend: Any,
    compaction_ratio: Any,
    path: Any,
    document_store_path: Any,
    autosave: Any,
) -> None:
    """Raise ValueError naming the first parameter outside its allowed range."""
    validate_tokenizer_settings(DEFAULTS["lang"] if lang is None else lang, tokenizer)
    if method is not None and method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    for name, value in (("k1", k1), ("b", b), ("delta", delta)):
        check_number(name, value)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    check_number("compaction_ratio", compaction_ratio)
    for name, value in (("path", path), ("document_store_path", document_store_path)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"{name} must be a non-empty directory path string or None; got {value!r}")
    if not isinstance(autosave, bool):
        raise ValueError(f"autosave must be True or False; got {autosave!r}")


def check_number(name: str, value: Any) -> None:
    """Check that ``value`` is None or a real number in the allowed range of parameter ``name``."""
    allowed, within = _RANGES[name]
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not within(value):
        raise ValueError(f"{name} must be {allowed}; got {value!r}")


def saved_settings(manifest: dict[str, Any], manifest_file: Path) -> dict[str, Any]:
    """
    The settings a manifest records, each checked; a relative ``document_store_path`` is resolved against the
    store directory (the manifest's grandparent), so a moved pair of directories still finds its documents.

    :raises DocumentStoreError: Naming the file and the field, for any value we would not write ourselves.
    """

    def refuse(field: str, value: Any, allowed: str) -> DocumentStoreError:
        return DocumentStoreError(f"{manifest_file}: field {field!r} is {value!r}"[:300] + f"; expected {allowed}")

    tokenizer, bm25 = manifest.get("tokenizer"), manifest.get("bm25")
    if not isinstance(tokenizer, dict) or not isinstance(bm25, dict):
        raise refuse("tokenizer" if not isinstance(tokenizer, dict) else "bm25", tokenizer, "an object")
    if tokenizer.get("lang") not in LANGUAGES:
        raise refuse("tokenizer.lang", tokenizer.get("lang"), f"one of {', '.join(LANGUAGES)}")
    if tokenizer.get("tokenizer") not in (None, CUSTOM) and not is_tokenizer_name(tokenizer.get("tokenizer")):
        allowed = f"null, {CUSTOM}, one of {TOKENIZERS} or SPLITTER:STOPWORDS ({'/'.join(SPLITTERS)}:a language)"
        raise refuse("tokenizer.tokenizer", tokenizer.get("tokenizer"), allowed)
    if bm25.get("method") not in METHODS:
        raise refuse("bm25.method", bm25.get("method"), f"one of {', '.join(METHODS)}")
    for name in ("k1", "b", "delta"):
        try:
            check_number(name, bm25.get(name) if name in bm25 else "missing")
        except ValueError:
            raise refuse(f"bm25.{name}", bm25.get(name), _RANGES[name][0]) from None
    documents, shared = manifest.get("documents"), manifest.get("document_store_path")
    if isinstance(documents, bool) or not isinstance(documents, int) or documents < 0:
        raise refuse("documents", documents, "an integer >= 0")
    if shared is not None and (not isinstance(shared, str) or not shared):
        raise refuse("document_store_path", shared, "null or a directory path relative to the store")
    return {
        "lang": tokenizer["lang"],
        "tokenizer": tokenizer["tokenizer"],
        **{name: bm25[name] for name in ("method", "k1", "b", "delta")},
        "document_store_path": None if shared is None else str((manifest_file.parent.parent / shared).resolve()),
    }


def resolve_settings(given: dict[str, Any], saved: dict[str, Any] | None, manifest_file: Path | None) -> dict[str, Any]:
    """
    The settings to use: the saved index's where one exists, else the given values or the defaults.

    :raises ValueError: If an explicitly given value contradicts the saved index (naming both and the file).
    :raises DocumentStoreError: If the index was built with a Python tokenizer and none is given now.
    """
    if saved is None:
        return {name: DEFAULTS[name] if value is None else value for name, value in given.items()}
    if saved["tokenizer"] == CUSTOM and not callable(given["tokenizer"]):
        raise DocumentStoreError(
            f"{manifest_file}: this index was built with a custom Python tokenizer; open it with the same function, "
            "BM25DocumentStore(path=..., tokenizer=my_function)"
        )
    for name, value in given.items():
        if value is not None and not _same(name, value, saved[name]):
            shown = "a Python function" if callable(value) else repr(value)
            raise ValueError(
                f"{name}={shown} contradicts the index saved in {manifest_file}, built with {name}={saved[name]!r}: "
                f"leave {name} unset to use the saved value, or save a new index to another path"
            )
    return {**saved, "tokenizer": given["tokenizer"] if saved["tokenizer"] == CUSTOM else saved["tokenizer"]}


def relative_to_store(document_store_path: str | None, store_path: Path) -> str | None:
    """``document_store_path`` as saved in a manifest: relative to the store directory, so both can move together."""
    if document_store_path is None:
        return None
    return os.path.relpath(Path(document_store_path).resolve(), store_path.resolve())


def _same(name: str, given: Any, saved: Any) -> bool:
    """Equal settings; paths compare after resolving, so './x' and 'x' agree; any function matches ``custom``.

    A saved ``document_store_path`` of None (the index holds its own documents) differs from any given path.
    """
    if name == "document_store_path":
        return saved is not None and Path(given).resolve() == Path(saved).resolve()
    if name == "tokenizer" and callable(given):
        return bool(saved == CUSTOM)
    return bool(given == saved)
