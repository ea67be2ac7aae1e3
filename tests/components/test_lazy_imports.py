"""Importing one component loads only what it needs: the packages import their submodules lazily.

Haystack itself imports torch when it is installed (``haystack.utils.device``), so torch is not checked;
the heavy libraries of our other components (faiss, bm25s, sentence-transformers, transformers, jieba) are.
"""

import subprocess
import sys

import pytest

HEAVY = ("faiss", "bm25s", "sentence_transformers", "transformers", "jieba", "Stemmer")


def modules_after(statement: str) -> set[str]:
    """Top-level module names loaded by a fresh interpreter after running ``statement``."""
    code = f"import sys\n{statement}\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return set(out.stdout.split())


@pytest.mark.parametrize(
    ("statement", "allowed"),
    [
        ("import components.rankers.mix_retrieve_ranker", set()),
        ("from components.rankers import MixRetrieveRanker", set()),
        ("import components.checks", set()),
        ("from components.retrievers import BM25Retriever", {"bm25s", "Stemmer"}),
        ("from components.stores import FAISSDocumentStore", {"faiss"}),
    ],
)
def test_importing_a_component_loads_no_other_backend(statement: str, allowed: set[str]) -> None:
    loaded = modules_after(statement) & set(HEAVY)
    assert loaded <= allowed, f"{statement} imported {sorted(loaded - allowed)}"


def test_package_names_still_resolve() -> None:
    from components.rankers import LocalCrossEncoderRanker, TEIRanker
    from components.retrievers import FAISSBatchEmbeddingRetriever
    from components.stores import BM25DocumentStore

    assert LocalCrossEncoderRanker.__module__ == "components.rankers.local_cross_encoder_ranker"
    assert TEIRanker.__name__ == "TEIRanker"
    assert FAISSBatchEmbeddingRetriever.__module__ == "components.retrievers.faiss.batch_embedding_retriever"
    assert BM25DocumentStore.__module__ == "components.stores.bm25.document_store"
