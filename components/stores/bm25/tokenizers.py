"""Tokenizers that turn text into BM25 terms, rebuilt from JSON-able settings.

A BM25 index only works if queries are cut into terms exactly like the documents were, so a tokenizer is
described by two strings (``lang`` and an optional ``tokenizer`` import path) that are saved with the index
and re-create the same tokenizer when the index is loaded.

- ``en``: lower-case, words of two or more word characters (the scikit-learn / bm25s pattern), English
  stopwords (bm25s' list), Snowball English stemmer (PyStemmer). This is the setting that gives nDCG@10 0.676
  on SciFact with Lucene BM25 k1=0.9 b=0.4.
- ``zh``: jieba ``cut_for_search`` (fine-grained segmentation that also emits the parts of long words),
  lower-case, punctuation dropped, Chinese function words (``tokenizers_zh_stopwords``) and English
  stopwords (bm25s' list) removed.
- ``character``: for CJK text without a segmenter (Japanese, Korean, Chinese): every run of CJK characters
  gives its single characters and its overlapping character bigrams (as Lucene's CJK analyzer does, plus
  unigrams so one-character queries still match); other runs of word characters become lower-cased words.
- ``tokenizer="package.module:function"``: any importable ``function(text: str) -> list[str]``; it replaces
  ``lang``'s tokenizer and, being a string, serializes with the store.
"""

import importlib
import logging
import re
from collections.abc import Callable
from typing import Any

LANGUAGES = ("en", "zh", "character")
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_EN_WORD = re.compile(r"(?u)\b\w\w+\b")
_HAS_WORD_CHAR = re.compile(r"\w")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN_OR_WORD = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+")
_CJK_CHAR = re.compile(rf"[{_CJK}]")


def validate_tokenizer_settings(lang: str, tokenizer: str | None) -> None:
    """Raise ValueError naming the parameter when ``lang`` or ``tokenizer`` is not one we can build."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}; got {lang!r}")
    if tokenizer is not None and (not isinstance(tokenizer, str) or not _IMPORT_PATH.match(tokenizer)):
        raise ValueError(
            f"tokenizer must be an import path 'package.module:function' of a function(text: str) -> list[str]; "
            f"got {tokenizer!r}"
        )


class BM25Tokenizer:
    """Cuts texts into BM25 terms according to ``lang`` or a user function; heavy parts load on first use."""

    def __init__(self, lang: str = "en", tokenizer: str | None = None) -> None:
        """
        :param lang: ``en``, ``zh`` or ``character`` (see the module docstring).
        :param tokenizer: Optional import path ``package.module:function`` of a ``function(text) -> list[str]``
            that replaces the built-in tokenizer of ``lang``.
        :raises ValueError: If ``lang`` or ``tokenizer`` is malformed.
        """
        validate_tokenizer_settings(lang, tokenizer)
        self.lang = lang
        self.tokenizer = tokenizer
        self._batch: Callable[[list[str]], list[list[str]]] | None = None

    @property
    def settings(self) -> dict[str, Any]:
        """The JSON-able description saved with an index: ``{"lang": ..., "tokenizer": ...}``."""
        return {"lang": self.lang, "tokenizer": self.tokenizer}

    def warm_up(self) -> None:
        """Load the stemmer, jieba's dictionary or the user function now rather than on the first text."""
        if self._batch is None:
            self._batch = self._build()

    def __call__(self, texts: list[str]) -> list[list[str]]:
        """Return the terms of each text, in order; repeated terms are kept (they count as term frequency)."""
        self.warm_up()
        assert self._batch is not None
        return self._batch(texts)

    def _build(self) -> Callable[[list[str]], list[list[str]]]:
        """The batch function for these settings: the user's import path, or the built-in one for ``lang``."""
        if self.tokenizer is None:
            return {"en": _english, "zh": _chinese, "character": _characters}[self.lang]()
        function = _import_function(self.tokenizer)
        return lambda texts: [self._checked_user_terms(function, text, i) for i, text in enumerate(texts)]

    def _checked_user_terms(self, function: Callable[[str], list[str]], text: str, i: int) -> list[str]:
        """Call the user function and make sure it kept its contract, naming the text that broke it."""
        terms = function(text)
        if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
            raise TypeError(
                f"tokenizer {self.tokenizer} must return list[str]; for text #{i} it returned {type(terms).__name__}"
            )
        return terms


def _import_function(import_path: str) -> Callable[[str], list[str]]:
    """Import ``package.module:function`` and explain clearly what is missing when it cannot be found."""
    module_name, _, attribute = import_path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"tokenizer {import_path}: cannot import module {module_name!r}: {e}") from e
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"tokenizer {import_path}: module {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"tokenizer {import_path}: {attribute!r} is not callable")
    return target


def _english() -> Callable[[list[str]], list[list[str]]]:
    """Lower-case, split into 2+ character words, drop English stopwords, Snowball-stem (each word once)."""
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN

    stopwords = frozenset(STOPWORDS_EN)
    stem_words = Stemmer.Stemmer("english").stemWords

    def tokenize(texts: list[str]) -> list[list[str]]:
        words = [[w for w in _EN_WORD.findall(text.lower()) if w not in stopwords] for text in texts]
        unique = list({w for text_words in words for w in text_words})
        stem_of = dict(zip(unique, stem_words(unique)))
        return [list(map(stem_of.__getitem__, text_words)) for text_words in words]

    return tokenize


def _chinese() -> Callable[[list[str]], list[list[str]]]:
    """jieba search-mode segmentation, lower-cased, without punctuation and Chinese/English stopwords."""
    import jieba
    from bm25s.stopwords import STOPWORDS_EN

    from components.stores.bm25.zh_stopwords import STOPWORDS_ZH

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    stopwords = STOPWORDS_ZH | frozenset(STOPWORDS_EN)

    def tokenize(text: str) -> list[str]:
        terms = (t.strip().lower() for t in jieba.cut_for_search(text))
        return [t for t in terms if t and t not in stopwords and _HAS_WORD_CHAR.search(t)]

    return lambda texts: [tokenize(text) for text in texts]


def _characters() -> Callable[[list[str]], list[list[str]]]:
    """CJK runs become character unigrams plus overlapping bigrams; other word runs become lower-cased words."""

    def tokenize(text: str) -> list[str]:
        terms: list[str] = []
        for run in _CJK_RUN_OR_WORD.findall(text.lower()):
            if _CJK_CHAR.match(run):
                terms.extend(run)
                terms.extend(run[i : i + 2] for i in range(len(run) - 1))
            else:
                terms.append(run)
        return terms

    return lambda texts: [tokenize(text) for text in texts]
