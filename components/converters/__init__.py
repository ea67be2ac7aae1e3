"""Converters: corpus files to Haystack Documents."""

from components.converters.jsonl_corpus_reader import CorpusFormatError, JSONLCorpusReader, iter_corpus

__all__ = ["CorpusFormatError", "JSONLCorpusReader", "iter_corpus"]
