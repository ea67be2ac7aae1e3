"""The languages BM25 stems: an ISO 639-1 code per Snowball stemmer of PyStemmer, with bm25s' stop list if it has one.

A language is named by its ISO 639-1 code only (``de``, not ``german``), so a pipeline YAML, the index manifest and
a reopened store all record and compare one spelling; PyStemmer's own name is refused with the code to use instead.
PyStemmer's ``porter`` (the original English algorithm, used by the ``lucene`` tokenizer) and ``dutch_porter`` are
variants of languages listed here, not languages of their own.

Light on purpose (no bm25s, numpy or PyStemmer at import): ``needle index --lang`` takes its choices from here.
"""

from typing import Any, NamedTuple


class Language(NamedTuple):
    """How one language is analysed: its English name, PyStemmer's algorithm, bm25s' stop list (None: none)."""

    name: str
    stemmer: str
    stopwords: str | None


STOPWORD_LISTS = {
    "en": "STOPWORDS_EN", "en_plus": "STOPWORDS_EN_PLUS", "de": "STOPWORDS_GERMAN", "nl": "STOPWORDS_DUTCH",
    "fr": "STOPWORDS_FRENCH", "es": "STOPWORDS_SPANISH", "pt": "STOPWORDS_PORTUGUESE", "it": "STOPWORDS_ITALIAN",
    "ru": "STOPWORDS_RUSSIAN", "sv": "STOPWORDS_SWEDISH", "no": "STOPWORDS_NORWEGIAN", "zh": "STOPWORDS_CHINESE",
    "tr": "STOPWORDS_TURKISH", "ko": "STOPWORDS_KOREAN", "da": "STOPWORDS_DANISH", "none": "",
}  # fmt: skip
"""bm25s' stop lists: its language codes -> the list's name in ``bm25s.stopwords`` (``none``: no list)."""

_NAMES = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish", "nl": "dutch",
    "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "st": "sesotho", "es": "spanish", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
STEMMED: dict[str, Language] = {code: Language(name, name, STOPWORD_LISTS.get(code)) for code, name in _NAMES.items()}
"""Every language a Snowball stemmer of PyStemmer stems, by ISO 639-1 code."""
VARIANTS = ("porter", "dutch_porter")
"""PyStemmer algorithms that are second stemmers of a language above, not languages ``lang`` takes."""
LANGUAGES = ("en", "zh", "character", *sorted(code for code in STEMMED if code != "en"))
"""Every ``lang``: ``en`` first (the default), Chinese, CJK characters, then the other stemmed languages."""
_BY_NAME = {language.name: code for code, language in STEMMED.items()} | {"chinese": "zh"}


def check_lang(lang: Any, setting: str = "lang") -> None:
    """Raise ValueError naming SETTING when LANG is not one of ``LANGUAGES``, with a hint for near misses."""
    if isinstance(lang, str) and lang in LANGUAGES:
        return
    raise ValueError(f"{setting} must be one of {', '.join(LANGUAGES)}; got {lang!r}{_hint(lang)}")


def _hint(lang: Any) -> str:
    """What the user probably meant: the code of a language's English name, or Norwegian quoted in YAML."""
    if lang is False:
        return " (Norwegian is 'no', quoted in YAML: an unquoted no reads as false)"
    if isinstance(lang, str) and lang.strip().lower() in _BY_NAME:
        return f" (for {lang.strip().lower()} use its ISO 639-1 code {_BY_NAME[lang.strip().lower()]!r})"
    if isinstance(lang, str) and lang.strip().lower() in LANGUAGES:
        return f" (codes are lower-case without spaces: {lang.strip().lower()!r})"
    return ""


def stopwords(code: str) -> frozenset[str]:
    """bm25s' stop list of the stemmed language CODE (empty where bm25s has none), as its words are written."""
    listed = STEMMED[code].stopwords
    if listed is None:
        return frozenset()
    import bm25s.stopwords

    return frozenset(getattr(bm25s.stopwords, listed))
