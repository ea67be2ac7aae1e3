"""Our sparse sentence-transformers embedders on a tiny SPLADE model built offline (tests/support/tiny_splade.py)."""

import numpy as np
import pytest
import torch
from haystack import Document, Pipeline
from haystack.dataclasses import SparseEmbedding
from sentence_transformers import SparseEncoder

from components.embedders.sentence_transformers_sparse_batch_text_embedder import (
    SentenceTransformersSparseBatchTextEmbedder,
)
from components.embedders.sentence_transformers_sparse_common import to_sparse_embeddings
from components.embedders.sentence_transformers_sparse_document_embedder import (
    SentenceTransformersSparseDocumentEmbedder,
)
from components.embedders.sentence_transformers_sparse_text_embedder import SentenceTransformersSparseTextEmbedder
from tests.support.tiny_splade import tiny_splade_path

TEXTS = ["Scurvy is caused by a lack of vitamin C", "Coffee and heart disease", "The moon orbits the earth"]


@pytest.fixture(scope="module")
def splade(minilm_path: str) -> str:
    """The tiny SPLADE model's directory."""
    return tiny_splade_path(minilm_path)


def reference(model_dir: str, texts: list[str], queries: bool) -> np.ndarray:
    """sentence-transformers' own dense output for TEXTS (the query or the document side)."""
    model = SparseEncoder(model_dir, device="cpu")
    encode = model.encode_query if queries else model.encode_document
    return encode(texts, convert_to_tensor=True).to_dense().numpy()


def dense(vector: SparseEmbedding, width: int) -> np.ndarray:
    """VECTOR as a dense row."""
    row = np.zeros(width, dtype=np.float32)
    row[vector.indices] = vector.values
    return row


def test_documents_get_the_models_document_vectors_as_new_documents(splade: str) -> None:
    """Each Document comes back as a new one with sparse_embedding equal to SparseEncoder.encode_document's row."""
    documents = [Document(content=t, meta={"n": i}) for i, t in enumerate(TEXTS)]
    out = SentenceTransformersSparseDocumentEmbedder(model=splade, progress_bar=False).run(documents=documents)
    expected = reference(splade, TEXTS, queries=False)
    for i, document in enumerate(out["documents"]):
        assert document is not documents[i]
        assert documents[i].sparse_embedding is None
        vector = document.sparse_embedding
        assert vector is not None
        assert 0 < len(vector.indices) < expected.shape[1] // 10  # sparse, not the whole vocabulary
        np.testing.assert_allclose(dense(vector, expected.shape[1]), expected[i], rtol=1e-4, atol=1e-6)


def test_queries_one_or_many_match_the_models_query_side_and_take_an_instruction(splade: str) -> None:
    """The text and batch embedders give encode_query's vectors; query_instruction is put before the text."""
    single = SentenceTransformersSparseTextEmbedder(model=splade, progress_bar=False)
    batch = SentenceTransformersSparseBatchTextEmbedder(model=splade, progress_bar=False, query_instruction="q: ")
    expected = reference(splade, [TEXTS[1], "q: " + TEXTS[1]], queries=True)
    width = expected.shape[1]
    np.testing.assert_allclose(
        dense(single.run(text=TEXTS[1])["sparse_embedding"], width), expected[0], rtol=1e-4, atol=1e-6
    )
    vectors = batch.run(texts=[TEXTS[1], TEXTS[2]])["sparse_embeddings"]
    np.testing.assert_allclose(dense(vectors[0], width), expected[1], rtol=1e-4, atol=1e-6)
    assert batch.run(texts=[])["sparse_embeddings"] == []
    with pytest.raises(ValueError, match="query"):
        single.run(text="   ")


def test_max_active_dims_keeps_the_strongest_terms(splade: str) -> None:
    """max_active_dims=5 keeps each vector's five largest weights."""
    full = SentenceTransformersSparseTextEmbedder(model=splade, progress_bar=False).run(text=TEXTS[0])
    cut = SentenceTransformersSparseTextEmbedder(model=splade, progress_bar=False, max_active_dims=5).run(text=TEXTS[0])
    strongest = sorted(full["sparse_embedding"].values, reverse=True)[:5]
    assert sorted(cut["sparse_embedding"].values, reverse=True) == pytest.approx(strongest)


def test_to_sparse_embeddings_keeps_empty_rows() -> None:
    """A batch whose middle row has no active term gives an empty vector there, not a shifted one."""
    batch = torch.tensor([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, 0.5]]).to_sparse()
    assert to_sparse_embeddings(batch) == [
        SparseEmbedding([1], [1.5]),
        SparseEmbedding([], []),
        SparseEmbedding([0, 2], [2.0, 0.5]),
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size must be an integer >= 1"),
        ({"max_active_dims": 0}, "max_active_dims must be an integer >= 1 or None"),
        ({"model": ""}, "model must be a non-empty string"),
        ({"backend": "tensorrt"}, "backend must be one of torch, onnx, openvino"),
    ],
)
def test_bad_options_are_refused_at_init(kwargs: dict, message: str) -> None:
    """Each bad option is a ValueError naming it, before any model loads."""
    with pytest.raises(ValueError, match=message):
        SentenceTransformersSparseDocumentEmbedder(**kwargs)


def test_components_round_trip_through_yaml(splade: str) -> None:
    """Every init parameter survives a pipeline's YAML; the loaded embedder gives the same vector."""
    pipeline = Pipeline()
    pipeline.add_component("query", SentenceTransformersSparseTextEmbedder(model=splade, query_instruction="q: "))
    pipeline.add_component("docs", SentenceTransformersSparseDocumentEmbedder(model=splade, meta_fields_to_embed=["t"]))
    loaded = Pipeline.loads(pipeline.dumps())
    for name in ("query", "docs"):
        assert loaded.get_component(name).to_dict() == pipeline.get_component(name).to_dict()
    first = pipeline.get_component("query").run(text="scurvy")["sparse_embedding"]
    assert loaded.get_component("query").run(text="scurvy")["sparse_embedding"] == first


def test_a_dense_model_is_refused_naming_it(tiny_model: str) -> None:
    """sentence-transformers would give a dense model an untrained sparse head and encode without error: an index
    of such vectors ranks nothing well, so loading it is refused, naming the model."""
    embedder = SentenceTransformersSparseDocumentEmbedder(model=tiny_model, progress_bar=False)
    with pytest.raises(ValueError, match=rf"model '{tiny_model}' is no SPLADE-style sparse model"):
        embedder.warm_up()
