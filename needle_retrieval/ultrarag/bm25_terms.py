"""UltraRAG's BM25 backend (`backend: bm25`): its `lang` and `tokenizer` mapped onto the BM25 store's tokenizer that
cuts the same terms (``components.stores.bm25.tokenizers``' ``SPLITTER:STOPWORDS`` names).
"""

from collections.abc import Mapping
from typing import Any

# UltraRAG's BM25 `tokenizer` names (any case, spaces around ignored, as it reads them; servers/retriever/src/
# bm25_tokenizer.py) -> the splitter of the BM25 store's bm25s-style tokenizer (components.stores.bm25.tokenizers);
# auto and jieba split with jieba for a Chinese `lang` and with bm25s' pattern for any other.
BM25_TOKENIZERS = {"auto": "regex", "default": "regex", "regex": "regex", "jieba": "regex", "character": "char",
                   "char": "char"}  # fmt: skip
# UltraRAG's bm25 `lang`, the stopwords= of its bm25s Tokenizer (so exactly the names bm25s knows) -> their code.
BM25_LANGS = {
    "en": "en", "english": "en", "en_plus": "en_plus", "english_plus": "en_plus", "de": "de", "german": "de",
    "nl": "nl", "dutch": "nl", "fr": "fr", "french": "fr", "es": "es", "spanish": "es", "pt": "pt",
    "portuguese": "pt", "it": "it", "italian": "it", "ru": "ru", "russian": "ru", "sv": "sv", "swedish": "sv",
    "no": "no", "norwegian": "no", "zh": "zh", "chinese": "zh", "tr": "tr", "turkish": "tr", "ko": "ko",
    "korean": "ko", "da": "da", "danish": "da",
}  # fmt: skip


def bm25_lang(block: Mapping[str, Any]) -> str:
    """Our BM25 store's `lang` for the seed's bm25 block: zh for a Chinese `lang`, else en (what the manifest
    records; the terms are those of `bm25_tokenizer`)."""
    return "zh" if _stopwords(block) == "zh" else "en"


def bm25_tokenizer(block: Mapping[str, Any]) -> str:
    """The BM25 store's tokenizer (``SPLITTER:STOPWORDS``, ``components.stores.bm25.tokenizers``) that cuts the terms
    UltraRAG's BM25 backend cuts for the seed's bm25 `tokenizer` and `lang`.

    UltraRAG builds a bm25s Tokenizer with `stopwords=lang` and no stemmer, and a splitter by `tokenizer`:
    default/regex bm25s' pattern; char/character each non-space character; auto/jieba jieba's search mode for
    a Chinese `lang`, else bm25s' pattern.

    :raises ValueError: A `lang` bm25s has no stopwords for, or a `tokenizer` UltraRAG does not know (naming both).
    """
    stopwords = _stopwords(block)
    mode = block.get("tokenizer", "auto")
    name = mode.strip().lower() if isinstance(mode, str) else mode
    if name not in BM25_TOKENIZERS:
        raise ValueError(f"backend_configs.bm25.tokenizer must be one of {', '.join(BM25_TOKENIZERS)}, got {mode!r}")
    splitter = "jieba" if name in ("auto", "jieba") and stopwords == "zh" else BM25_TOKENIZERS[name]
    return f"{splitter}:{stopwords}"


def _stopwords(block: Mapping[str, Any]) -> str:
    """The stopword list (a bm25s language code) of the bm25 block's `lang`."""
    lang = block.get("lang", "en")
    if not isinstance(lang, str) or lang not in BM25_LANGS:
        raise ValueError(
            f"backend_configs.bm25.lang must be one of {', '.join(BM25_LANGS)} (bm25s' stopword languages), "
            f"got {lang!r}"
        )
    return BM25_LANGS[lang]
