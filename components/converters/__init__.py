"""Converters: corpus files to Haystack Documents.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "jsonl_corpus_reader": ["CorpusFormatError", "JSONLCorpusReader", "iter_corpus"],
    "jsonl_image_corpus_reader": ["JSONLImageCorpusReader", "iter_image_corpus"],
    "jsonl_lines": ["count_objects", "iter_json_objects"],
}

if TYPE_CHECKING:
    from .jsonl_corpus_reader import CorpusFormatError as CorpusFormatError
    from .jsonl_corpus_reader import JSONLCorpusReader as JSONLCorpusReader
    from .jsonl_corpus_reader import iter_corpus as iter_corpus
    from .jsonl_image_corpus_reader import JSONLImageCorpusReader as JSONLImageCorpusReader
    from .jsonl_image_corpus_reader import iter_image_corpus as iter_image_corpus
    from .jsonl_lines import count_objects as count_objects
    from .jsonl_lines import iter_json_objects as iter_json_objects
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
