"""A batch of texts as term ids local to the batch: what a tokenizer hands the BM25 index to write."""

import itertools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EncodedTexts:
    """
    A batch of texts as term ids local to the batch, what a write hands the index: ``terms[i]`` (sorted, so a
    build's vocabulary does not depend on Python's hash seed) is local id ``i``; text ``k``'s ids are the
    ``lengths[k]`` entries of ``flat`` after those of the texts before it.
    """

    terms: list[str]
    flat: np.ndarray  # int32
    lengths: np.ndarray  # int64, one per text


def encoded(texts_terms: list[list[str]]) -> EncodedTexts:
    """The terms of each text (a tokenizer's output) as :class:`EncodedTexts`."""
    terms = sorted(set().union(*texts_terms))
    local = dict(zip(terms, range(len(terms)), strict=True))
    lengths = np.fromiter(map(len, texts_terms), dtype=np.int64, count=len(texts_terms))
    flat = np.fromiter(
        map(local.__getitem__, itertools.chain.from_iterable(texts_terms)), dtype=np.int32, count=int(lengths.sum())
    )
    return EncodedTexts(terms, flat, lengths)
