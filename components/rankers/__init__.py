"""Rerankers (mxRAG's contract as Haystack components): local cross-encoder, TEI/Infinity client, dense+sparse mix."""

from components.rankers.local_cross_encoder_ranker import LocalCrossEncoderRanker
from components.rankers.mix_retrieve_batch_ranker import MixRetrieveBatchRanker
from components.rankers.mix_retrieve_ranker import MixRetrieveRanker
from components.rankers.model_dir_checks import ModelDirError
from components.rankers.rerank_protocol import RerankServerError
from components.rankers.reranker_base import Reranker
from components.rankers.reranker_factory import create_reranker
from components.rankers.tei_ranker import TEIRanker

__all__ = [
    "LocalCrossEncoderRanker",
    "MixRetrieveBatchRanker",
    "MixRetrieveRanker",
    "ModelDirError",
    "RerankServerError",
    "Reranker",
    "TEIRanker",
    "create_reranker",
]
