"""Rerankers (mxRAG's contract as Haystack components): local cross-encoder, TEI/Infinity client, dense+sparse mix.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one component never
loads the heavy libraries (torch, faiss, bm25s) of the others.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "local_cross_encoder_ranker": ["LocalCrossEncoderRanker"],
    "mix_retrieve_batch_ranker": ["MixRetrieveBatchRanker"],
    "mix_retrieve_ranker": ["MixRetrieveRanker"],
    "model_dir_checks": ["ModelDirError"],
    "rerank_protocol": ["RerankServerError"],
    "reranker_base": ["Reranker"],
    "reranker_factory": ["create_reranker"],
    "tei_ranker": ["TEIRanker"],
}

if TYPE_CHECKING:
    from .local_cross_encoder_ranker import LocalCrossEncoderRanker as LocalCrossEncoderRanker
    from .mix_retrieve_batch_ranker import MixRetrieveBatchRanker as MixRetrieveBatchRanker
    from .mix_retrieve_ranker import MixRetrieveRanker as MixRetrieveRanker
    from .model_dir_checks import ModelDirError as ModelDirError
    from .rerank_protocol import RerankServerError as RerankServerError
    from .reranker_base import Reranker as Reranker
    from .reranker_factory import create_reranker as create_reranker
    from .tei_ranker import TEIRanker as TEIRanker
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
