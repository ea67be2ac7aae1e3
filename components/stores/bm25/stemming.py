"""The tokenizers of the stemmed languages (``en`` and every other language PyStemmer stems): case-fold, split into
words, drop the language's stop words, Snowball-stem each distinct word once.

English is cut as bm25s cuts it (``str.lower``, ``re``'s ``\\b\\w\\w+\\b``), which gives SciFact's nDCG@10 0.676; the
other languages as ``components.stores.bm25.tokenizers`` describes (NFC, ``casefold``, the ``regex`` module's word
characters, which keep combining marks and joiners inside a word).
"""

import functools
import itertools
import re
import unicodedata
from collections.abc import Callable

import numpy as np
import regex

from components.stores.bm25.encoded_texts import EncodedTexts
from components.stores.bm25.languages import STEMMED, stopwords

STEM_CACHE_WORDS = 500_000
"""How many distinct words a stemming tokenizer keeps stemmed (about 150 bytes each)."""
EN_WORD = re.compile(r"(?u)\b\w\w+\b")
"""bm25s' default pattern: words of two or more word characters (``re``'s)."""
_UNICODE_WORD = regex.compile(r"\w\w+")  # regex's \w: letters, marks, digits, connectors, joiners (UTS #18)


def case_folding(lang: str) -> Callable[[str], str]:
    """How LANG's text is lower-cased before it is split: ``str.lower`` for English (as bm25s does), else NFC then
    ``casefold``, Turkish with its dotted and dotless i first (I to dotless i, dotted capital I to i)."""
    if lang == "en":
        return str.lower
    if lang == "tr":
        return lambda text: unicodedata.normalize("NFC", text).replace("I", "\u0131").replace("\u0130", "i").casefold()
    return lambda text: unicodedata.normalize("NFC", text).casefold()


def splitting(lang: str) -> Callable[[str], list[str]]:
    """LANG's words of a text: case-folded, runs of two or more word characters (English: ``re``'s, as bm25s;
    other languages: the ``regex`` module's, which keeps combining marks and joiners inside a word)."""
    fold, find = case_folding(lang), (EN_WORD if lang == "en" else _UNICODE_WORD).findall
    return lambda text: find(fold(text))


@functools.cache
def stem_parts(
    lang: str = "en", cache_words: int = STEM_CACHE_WORDS
) -> tuple[frozenset[str], Callable[[list[str]], list[str]]]:
    """
    One per process and language: bm25s' stop list of LANG (case-folded like its texts; empty where bm25s has
    none), and PyStemmer's Snowball ``stemWords`` of LANG behind a cache of the words stemmed so far (loaded here,
    on first use). Each chunk of a streamed build holds tens of thousands of distinct words, mostly the same from
    chunk to chunk: stemming them again was a quarter of the build's tokenizing, where bm25s, tokenizing the whole
    corpus at once, stems each word once. Past ``cache_words`` words the cache starts afresh with the words asked
    for (a new dict: a thread still reading the old one is unaffected).
    """
    import Stemmer

    stem_words = Stemmer.Stemmer(STEMMED[lang].stemmer).stemWords
    caches: list[dict[str, str]] = [{}]

    def stems(words: list[str]) -> list[str]:
        """The stem of each of these distinct words."""
        cache = caches[0]
        new = [word for word in words if word not in cache]
        if new:
            if len(cache) + len(new) > cache_words:
                cache, new = {}, words
                caches[0] = cache
            cache.update(zip(new, stem_words(new), strict=True))
        return list(map(cache.__getitem__, words))

    return frozenset(map(case_folding(lang), stopwords(lang))), stems


def stemmed(lang: str) -> Callable[[list[str]], list[list[str]]]:
    """Case-fold, split into 2+ character words, drop LANG's stopwords, Snowball-stem (each word once).

    Per word only C-level work remains (the regex, a dict lookup that maps a stopword to None, a filter), and
    each distinct word of a batch is stemmed once: for English the terms are those of bm25s' ``tokenize``, at its
    speed.
    """
    stop, stem_words = stem_parts(lang)
    split = splitting(lang)

    def tokenize(texts: list[str]) -> list[list[str]]:
        words = [split(text) for text in texts]
        unique = list(set().union(*words).difference(stop))
        stem_of = dict(zip(unique, stem_words(unique), strict=True)).get
        return [list(filter(None, map(stem_of, text_words))) for text_words in words]

    return tokenize


def stemmed_encoder(lang: str) -> Callable[[list[str]], EncodedTexts]:
    """``stemmed``'s terms as :class:`EncodedTexts`: every word of the batch maps to its stem's local id (a
    stopword to -1) in one C-level pass, and numpy drops the stopwords and counts what each text keeps."""
    stop, stem_words = stem_parts(lang)
    split = splitting(lang)

    def encode(texts: list[str]) -> EncodedTexts:
        words = [split(text) for text in texts]
        distinct = set().union(*words)
        kept = list(distinct.difference(stop))
        stems = stem_words(kept)
        terms = sorted(set(stems).difference(("",)))
        local = dict(zip(terms, range(len(terms)), strict=True))
        word_id = dict.fromkeys(distinct, -1)  # stopwords (and a word whose stem is empty) stay -1
        word_id.update((word, local[stem]) for word, stem in zip(kept, stems, strict=True) if stem)
        counts = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        ids = np.fromiter(
            map(word_id.__getitem__, itertools.chain.from_iterable(words)), dtype=np.int32, count=int(counts.sum())
        )
        keep = ids >= 0
        kept_before = np.concatenate(([0], np.cumsum(keep)))
        ends = np.cumsum(counts)
        return EncodedTexts(terms, ids[keep], kept_before[ends] - kept_before[ends - counts])

    return encode
