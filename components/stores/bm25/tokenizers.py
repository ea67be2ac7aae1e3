"""Tokenizers that turn text into BM25 terms, chosen by name from a fixed list, or passed as a Python function.

A BM25 index only works if queries are cut into terms exactly like the documents were, so the tokenizer is
saved with the index by name and re-created when the index is loaded. A name read from data (a pipeline
YAML, a saved manifest) only ever selects one of the built-ins below: no module is imported and no function
is looked up from it, so opening someone else's index or pipeline never runs their code.

- ``en``: lower-case, words of two or more word characters (the scikit-learn / bm25s pattern), English
  stopwords (bm25s' list), Snowball English stemmer (PyStemmer). This is the setting that gives nDCG@10 0.676
  on SciFact with Lucene BM25 k1=0.9 b=0.4.
- every other language PyStemmer stems, by ISO 639-1 code (``de``, ``fr``, ``ru``, ``ar``, ...;
  ``components.stores.bm25.languages``): the text in Unicode NFC, case-folded (``str.casefold``: ß is ss, a final
  sigma is a sigma; Turkish maps I to a dotless i and a dotted capital I to i first), words of two or more Unicode
  word characters (the ``regex`` module's ``\\w``, which keeps the vowel signs of Devanagari or Tamil, Arabic
  diacritics and the zero-width non-joiner inside a word, where ``re`` splits there), bm25s' stop list of that
  language where bm25s has one, then the language's Snowball stemmer.
- ``zh``: jieba ``cut_for_search`` (fine-grained segmentation that also emits the parts of long words),
  lower-case, punctuation dropped, Chinese function words (``zh_stopwords``) and English stopwords removed.
- ``character``: for CJK text without a segmenter (Japanese, Korean, Chinese): every run of CJK characters
  gives its single characters and its overlapping character bigrams (as Lucene's CJK analyzer does, plus
  unigrams so one-character queries still match); other runs of word characters become lower-cased words.
- ``whitespace``: lower-cased text split at whitespace, nothing removed (codes, identifiers, pre-tokenized text).
- ``words``: lower-cased runs of word characters, no stopwords and no stemming (any alphabetic language).
- ``lucene``: Lucene's StandardTokenizer segmentation (one-character and numeric tokens kept), lower-cased; with
  ``lang="en"`` also EnglishAnalyzer's possessive filter, 33-word stop list and Porter stemmer
  (``components.stores.bm25.lucene_tokenizer``): Lucene's recall, for users who compare with it.
- ``SPLITTER:STOPWORDS`` (e.g. ``regex:en``, ``char:zh``, ``jieba:zh``): the terms of a bm25s ``Tokenizer`` built
  with that splitter, ``stopwords=STOPWORDS`` and no stemmer, which is what UltraRAG's BM25 backend indexes
  (``needle_retrieval.ultrarag`` maps its `tokenizer` and `lang` onto these names). The text is lower-cased, then
  split: ``regex`` by bm25s' default pattern ``\b\\w\\w+\b``, ``char`` into its non-space characters (one each,
  punctuation included), ``jieba`` by jieba's ``cut_for_search`` with each piece stripped and blanks dropped; then
  bm25s' stopword list of that language goes (``none``: no stopwords).
- a Python callable ``function(text: str) -> list[str]`` passed in code: used as is; it cannot be written
  into a YAML file or a manifest, so the index records only that a custom tokenizer was used.
"""

import logging
import re
from collections.abc import Callable
from typing import Any

from components.stores.bm25.encoded_texts import EncodedTexts as EncodedTexts  # index.py and tests import it here
from components.stores.bm25.encoded_texts import encoded
from components.stores.bm25.languages import LANGUAGES, STEMMED, STOPWORD_LISTS, check_lang
from components.stores.bm25.stemming import EN_WORD, stemmed, stemmed_encoder

TOKENIZERS = ("en", "zh", "character", "whitespace", "words", "lucene", *LANGUAGES[3:])
SPLITTERS = ("regex", "char", "jieba")
"""The splitters of the ``SPLITTER:STOPWORDS`` tokenizers (bm25s without a stemmer, as UltraRAG runs it); their
STOPWORDS are ``STOPWORD_LISTS``' codes."""
CUSTOM = "custom"
"""What a saved index records as its tokenizer when it was built with a Python callable."""
_WORD = re.compile(r"\w+")
_HAS_WORD_CHAR = re.compile(r"\w")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN_OR_WORD = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+")
_CJK_CHAR = re.compile(rf"[{_CJK}]")

TokenizerSetting = str | Callable[[str], list[str]] | None


def validate_tokenizer_settings(lang: Any, tokenizer: Any) -> None:
    """Raise ValueError naming the parameter when ``lang`` or ``tokenizer`` is not one we can build."""
    check_lang(lang)
    if tokenizer is None or callable(tokenizer):
        return
    if not is_tokenizer_name(tokenizer):
        raise ValueError(
            f"tokenizer must be one of {', '.join(TOKENIZERS[:6])} or a Python function(text: str) -> list[str] "
            f"passed in code (names read from files never import code), a stemmed language of lang "
            f"({', '.join(TOKENIZERS[6:])}), or SPLITTER:STOPWORDS with SPLITTER one of {', '.join(SPLITTERS)} and "
            f"STOPWORDS one of {', '.join(STOPWORD_LISTS)}; got {tokenizer!r}"
        )


def is_tokenizer_name(name: Any) -> bool:
    """Whether NAME names a built-in tokenizer: one of ``TOKENIZERS`` or a ``SPLITTER:STOPWORDS`` pair."""
    return isinstance(name, str) and (name in TOKENIZERS or bm25s_parts(name) is not None)


def bm25s_parts(name: str) -> tuple[str, str] | None:
    """(splitter, stopwords) of a ``SPLITTER:STOPWORDS`` tokenizer name; None for any other name."""
    splitter, colon, stopwords = name.partition(":")
    return (splitter, stopwords) if colon and splitter in SPLITTERS and stopwords in STOPWORD_LISTS else None


def tokenizer_name(tokenizer: TokenizerSetting) -> str | None:
    """How a tokenizer setting is recorded in a saved index: its built-in name, ``custom`` for a callable."""
    return CUSTOM if callable(tokenizer) else tokenizer


class BM25Tokenizer:
    """Cuts texts into BM25 terms with a built-in tokenizer or a user function; heavy parts load on first use."""

    def __init__(self, lang: str = "en", tokenizer: TokenizerSetting = None) -> None:
        """
        :param lang: ``en``, ``zh``, ``character`` or a stemmed language's code such as ``de`` (see the module
            docstring), used when ``tokenizer`` is None.
        :param tokenizer: A built-in name (``whitespace``, ``words``, ``lucene``, or a ``lang`` name), or a function
            ``function(text) -> list[str]``; replaces ``lang``'s tokenizer.
        :raises ValueError: If ``lang`` or ``tokenizer`` is not one of the allowed values.
        """
        validate_tokenizer_settings(lang, tokenizer)
        self.lang = lang
        self.tokenizer = tokenizer
        self._batch: Callable[[list[str]], list[list[str]]] | None = None
        self._encode: Callable[[list[str]], EncodedTexts] | None = None

    def warm_up(self) -> None:
        """Load the stemmer or jieba's dictionary now rather than on the first text."""
        if self._batch is None:
            self._batch = self._build()
            name = None if callable(self.tokenizer) else self.tokenizer or self.lang
            self._encode = stemmed_encoder(name) if name in STEMMED else None

    def __call__(self, texts: list[str]) -> list[list[str]]:
        """Return the terms of each text, in order; repeated terms are kept (they count as term frequency)."""
        self.warm_up()
        assert self._batch is not None
        return self._batch(texts)

    def encode(self, texts: list[str]) -> EncodedTexts:
        """``encoded(self(texts))``: the same terms, as ids local to the batch. A stemming tokenizer builds
        them without making each text's list of terms first (a million-passage build's largest Python cost)."""
        self.warm_up()
        return self._encode(texts) if self._encode is not None else encoded(self(texts))

    def _build(self) -> Callable[[list[str]], list[list[str]]]:
        """The batch function for these settings: the user's function, or the built-in one by name."""
        if callable(self.tokenizer):
            function = self.tokenizer
            return lambda texts: [self._checked_user_terms(function, text, i) for i, text in enumerate(texts)]
        name = self.tokenizer or self.lang
        if name == "lucene":
            from components.stores.bm25.lucene_tokenizer import lucene_tokenizer

            return lucene_tokenizer(english=self.lang == "en")
        parts = bm25s_parts(name)
        if parts is not None:
            return _bm25s_style(*parts)
        if name in STEMMED:
            return stemmed(name)
        return _BUILT_INS[name]()

    def _checked_user_terms(self, function: Callable[[str], list[str]], text: str, i: int) -> list[str]:
        """Call the user function and make sure it kept its contract, naming the text that broke it."""
        terms = function(text)
        if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
            name = getattr(function, "__qualname__", repr(function))
            raise TypeError(f"tokenizer {name} must return list[str]; for text #{i} it returned {type(terms).__name__}")
        return terms


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


def _bm25s_style(splitter: str, stopwords: str) -> Callable[[list[str]], list[list[str]]]:
    """A bm25s ``Tokenizer(splitter=..., stopwords=STOPWORDS, stemmer=None)``'s terms: lower-case the text, split
    it with SPLITTER, drop the stopwords (see the module docstring)."""
    import bm25s.stopwords

    dropped = frozenset(getattr(bm25s.stopwords, STOPWORD_LISTS[stopwords]) if stopwords != "none" else ())
    split: Callable[[str], list[str]]
    if splitter == "regex":
        split = EN_WORD.findall
    elif splitter == "char":
        split = _non_space_characters
    else:
        split = _jieba_pieces()
    return lambda texts: [[t for t in split(text.lower()) if t not in dropped] for text in texts]


def _non_space_characters(text: str) -> list[str]:
    """Every character of TEXT that is not whitespace, one term each."""
    return [character for character in text if character.strip()]


def _jieba_pieces() -> Callable[[str], list[str]]:
    """jieba's search-mode pieces of a text, each stripped, blanks dropped (nothing else removed)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()

    def split(text: str) -> list[str]:
        pieces = (piece.strip() for piece in jieba.cut_for_search(text))
        return [piece for piece in pieces if piece]

    return split


def _whitespace() -> Callable[[list[str]], list[list[str]]]:
    """Lower-cased text split at runs of whitespace."""
    return lambda texts: [text.lower().split() for text in texts]


def _words() -> Callable[[list[str]], list[list[str]]]:
    """Lower-cased runs of word characters (letters, digits, underscore of any script)."""
    return lambda texts: [_WORD.findall(text.lower()) for text in texts]


_BUILT_INS: dict[str, Callable[[], Callable[[list[str]], list[list[str]]]]] = {
    "zh": _chinese,
    "character": _characters,
    "whitespace": _whitespace,
    "words": _words,
}
