"""Fusion stages that join the Candidates of a dense and a BM25 retriever into one ranked list per query.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "mix_batch_joiner": ["MixBatchJoiner"],
    "rrf_batch_joiner": ["RRFBatchJoiner"],
}

if TYPE_CHECKING:
    from .mix_batch_joiner import MixBatchJoiner as MixBatchJoiner
    from .rrf_batch_joiner import RRFBatchJoiner as RRFBatchJoiner
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
