"""Sentence-transformers embedders with real MiniLM weights: the seed's options, shared model, serialization."""

import re
import socket
from pathlib import Path

import huggingface_hub.constants
import numpy as np
import pytest
import torch
from haystack import Document, Pipeline
from haystack.utils import ComponentDevice
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Router
from sentence_transformers.sentence_transformer.modules import Dense

from components.embedders import (
    SentenceTransformersBatchTextEmbedder,
    SentenceTransformersDocumentEmbedder,
    SentenceTransformersTextEmbedder,
    resolve_model,
)
from components.embedders.model_resolver import hub_reachable

QUERY = "what causes scurvy?"


@pytest.fixture(scope="module")
def prompt_model(minilm_path: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """MiniLM saved with a `prompts` dict in its config, so `prompt_name` has something to select."""
    model = SentenceTransformer(minilm_path)
    model.prompts = {"query": "query: ", "passage": "passage: "}
    path = tmp_path_factory.mktemp("prompt-model")
    model.save(str(path))
    return str(path)


@pytest.fixture(scope="module")
def router_model(minilm_path: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """An asymmetric Router model: the "document" route is the "query" route followed by a x2 linear layer."""
    doubling = Dense(384, 384, bias=False, activation_function=torch.nn.Identity())
    torch.nn.init.eye_(doubling.linear.weight)
    doubling.linear.weight.data *= 2.0
    query_modules = list(SentenceTransformer(minilm_path).children())
    document_modules = [*SentenceTransformer(minilm_path).children(), doubling]
    model = SentenceTransformer(modules=[Router.for_query_document(query_modules, document_modules)])
    path = tmp_path_factory.mktemp("router-model")
    model.save(str(path))
    return str(path)


def embed(text: str, **options: object) -> np.ndarray:
    """One query embedding from a fresh text embedder built with `options`."""
    embedder = SentenceTransformersTextEmbedder(progress_bar=False, **options)
    return np.array(embedder.run(text=text)["embedding"])


def test_query_batch_and_document_embedders_share_one_loaded_model(minilm_path: str) -> None:
    query = SentenceTransformersTextEmbedder(query_instruction="q: ", prompt_name="query", task="query")
    batch = SentenceTransformersBatchTextEmbedder(model=minilm_path, progress_bar=False)
    documents = SentenceTransformersDocumentEmbedder(
        model=minilm_path, task="document", embedding_path="/x/e.npy", overwrite=True
    )
    for embedder in (query, batch, documents):
        embedder.warm_up()
    # The default hub id resolves offline to the bundled path, so all three hit one factory entry.
    assert query.embedding_backend is batch.embedding_backend is documents.embedding_backend
    assert query.embedding_backend.model is documents.embedding_backend.model


def test_query_instruction_changes_the_embedding_exactly_like_a_prefix(minilm_path: str) -> None:
    instructed = embed(QUERY, model=minilm_path, query_instruction="Represent this question: ")
    prefixed = embed("Represent this question: " + QUERY, model=minilm_path)
    np.testing.assert_array_equal(instructed, prefixed)
    assert not np.allclose(instructed, embed(QUERY, model=minilm_path), atol=1e-3)


def test_a_runs_instruction_replaces_the_init_one_and_none_keeps_it(minilm_path: str) -> None:
    single = SentenceTransformersTextEmbedder(model=minilm_path, query_instruction="recorded: ", progress_bar=False)
    batch = SentenceTransformersBatchTextEmbedder(model=minilm_path, query_instruction="recorded: ", progress_bar=False)
    for instruction, text in [(None, "recorded: " + QUERY), ("asked: ", "asked: " + QUERY), ("", QUERY)]:
        expected = embed(text, model=minilm_path)  # no instruction of its own: exactly the text
        np.testing.assert_array_equal(single.run(text=QUERY, query_instruction=instruction)["embedding"], expected)
        rows = batch.run(texts=[QUERY, QUERY], query_instruction=instruction)["embeddings"]
        np.testing.assert_allclose(rows, [expected, expected], atol=1e-6)
    assert single.query_instruction == batch.query_instruction == "recorded: "  # the init value stays


@pytest.mark.parametrize("cls", [SentenceTransformersTextEmbedder, SentenceTransformersBatchTextEmbedder])
def test_a_runs_instruction_must_be_a_string(cls: type) -> None:
    inputs = {"text": QUERY} if cls is SentenceTransformersTextEmbedder else {"texts": [QUERY]}
    with pytest.raises(ValueError, match="query_instruction must be a string, got 3"):
        cls().run(**inputs, query_instruction=3)  # refused before the model loads


def test_prompt_name_selects_a_prompt_from_the_model_config(prompt_model: str) -> None:
    prompted = embed(QUERY, model=prompt_model, prompt_name="query")
    np.testing.assert_allclose(prompted, embed("query: " + QUERY, model=prompt_model), atol=1e-6)
    assert not np.allclose(prompted, embed(QUERY, model=prompt_model), atol=1e-3)
    with pytest.raises(ValueError, match="nope"):
        embed(QUERY, model=prompt_model, prompt_name="nope")


def test_document_prompt_name_prefixes_passages(prompt_model: str) -> None:
    docs = [Document(id="a", content="Vitamin C deficiency causes scurvy.")]
    embedder = SentenceTransformersDocumentEmbedder(model=prompt_model, prompt_name="passage", progress_bar=False)
    vector = np.array(embedder.run(documents=docs)["documents"][0].embedding)
    np.testing.assert_allclose(vector, embed("passage: " + docs[0].content, model=prompt_model), atol=1e-6)


def test_task_routes_queries_and_documents_differently(router_model: str) -> None:
    as_query = embed(QUERY, model=router_model, task="query")
    as_document = embed(QUERY, model=router_model, task="document")
    np.testing.assert_allclose(as_document, 2 * as_query, atol=1e-5)
    embedder = SentenceTransformersDocumentEmbedder(model=router_model, task="document", progress_bar=False)
    vector = embedder.run(documents=[Document(content=QUERY)])["documents"][0].embedding
    np.testing.assert_allclose(vector, as_document, atol=1e-5)


def test_batch_embedder_matches_single_queries_in_order(minilm_path: str) -> None:
    texts = ["vitamin C", "a much longer question about the cerebral white matter of newborns", "scurvy"]
    batch = SentenceTransformersBatchTextEmbedder(model=minilm_path, query_instruction="q: ", progress_bar=False)
    vectors = np.array(batch.run(texts=texts)["embeddings"])
    singles = np.array([embed(t, model=minilm_path, query_instruction="q: ") for t in texts])
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(vectors, singles, atol=1e-5)


def test_empty_batch_returns_nothing_without_loading_a_model() -> None:
    batch = SentenceTransformersBatchTextEmbedder(model="/nonexistent/model")
    assert batch.run(texts=[]) == {"embeddings": []}
    assert batch.embedding_backend is None


def test_document_embedder_returns_new_documents_in_order(minilm_path: str) -> None:
    docs = [Document(id=str(i), content=f"passage number {i}", meta={"n": i}) for i in range(7)]
    embedder = SentenceTransformersDocumentEmbedder(model=minilm_path, normalize_embeddings=True, progress_bar=False)
    out = embedder.run(documents=docs)["documents"]
    assert [d.id for d in out] == [d.id for d in docs]
    assert [d.meta for d in out] == [d.meta for d in docs]
    assert all(d.embedding is None for d in docs)
    vectors = np.array([d.embedding for d in out])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[3], embed("passage number 3", model=minilm_path), atol=1e-5)


def test_chunked_encoding_gives_the_same_vectors(minilm_path: str) -> None:
    docs = [Document(id=str(i), content="word " * (i + 1)) for i in range(10)]
    whole = SentenceTransformersDocumentEmbedder(model=minilm_path, progress_bar=False).run(documents=docs)
    chunked = SentenceTransformersDocumentEmbedder(model=minilm_path, encode_chunk_size=3, progress_bar=False)
    np.testing.assert_allclose(
        [d.embedding for d in chunked.run(documents=docs)["documents"]],
        [d.embedding for d in whole["documents"]],
        atol=1e-5,
    )


def test_wrong_input_types_are_refused_before_the_model_loads() -> None:
    """Queries follow the shared query rules (ValueError, as in BM25 and the rankers); documents stay a TypeError."""
    with pytest.raises(ValueError, match="query must be a string, got list; pass a batch of queries to the batch"):
        SentenceTransformersTextEmbedder(model="/nonexistent/model").run(text=["a list"])
    with pytest.raises(ValueError, match="queries must be a list of strings, got str; pass a single query"):
        SentenceTransformersBatchTextEmbedder(model="/nonexistent/model").run(texts="one string")
    with pytest.raises(ValueError, match=r"queries\[1\] must be a string, got int"):
        SentenceTransformersBatchTextEmbedder(model="/nonexistent/model").run(texts=["a", 2])
    with pytest.raises(TypeError, match=r"documents\[0\] must be a Document, got str"):
        SentenceTransformersDocumentEmbedder().run(documents=["text"])


@pytest.mark.parametrize(
    ("cls", "options", "message"),
    [
        (SentenceTransformersTextEmbedder, {"batch_size": 0}, "batch_size must be an integer >= 1, got 0"),
        (
            SentenceTransformersTextEmbedder,
            {"prompt_name": ""},
            "prompt_name must be a non-empty string or None, got ''",
        ),
        (SentenceTransformersBatchTextEmbedder, {"task": 3}, "task must be a non-empty string or None, got 3"),
        (SentenceTransformersTextEmbedder, {"query_instruction": None}, "query_instruction must be a string, got None"),
        (
            SentenceTransformersTextEmbedder,
            {"gpu_ids": []},
            "gpu_ids must be a non-empty list of distinct integers >= 0, or None; got []",
        ),
        (
            SentenceTransformersDocumentEmbedder,
            {"gpu_ids": [0, 0]},
            "gpu_ids must be a non-empty list of distinct integers >= 0, or None; got [0, 0]",
        ),
        (
            SentenceTransformersDocumentEmbedder,
            {"gpu_ids": [-1]},
            "gpu_ids must be a non-empty list of distinct integers >= 0, or None; got [-1]",
        ),
        (
            SentenceTransformersTextEmbedder,
            {"gpu_ids": [1, 2], "device": ComponentDevice.from_str("cpu")},
            "device must be None or cuda:1 when gpu_ids=[1, 2] is set, got cpu",
        ),
        (
            SentenceTransformersDocumentEmbedder,
            {"encode_chunk_size": 0},
            "encode_chunk_size must be an integer >= 1, got 0",
        ),
        (
            SentenceTransformersDocumentEmbedder,
            {"embedding_path": "e.bin"},
            "embedding_path must end with '.npy', got 'e.bin'",
        ),
        (
            SentenceTransformersDocumentEmbedder,
            {"embedding_path": "e.npy", "precision": "int8", "quantization_ranges": [[0.0], [1.0]]},
            "embedding_path stores float32 only; precision must be 'float32', got 'int8'",
        ),
    ],
)
def test_bad_parameters_fail_at_init(cls: type, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        cls(**options)
    assert str(info.value) == message


def test_gpu_ids_put_the_model_on_the_first_gpu_and_survive_serialization() -> None:
    embedder = SentenceTransformersBatchTextEmbedder(gpu_ids=[1, 2])
    assert embedder.device == ComponentDevice.from_str("cuda:1")
    clone = SentenceTransformersBatchTextEmbedder.from_dict(embedder.to_dict())
    assert (clone.gpu_ids, clone.device) == ([1, 2], embedder.device)


@pytest.mark.parametrize(
    ("cls", "options"),
    [
        (SentenceTransformersTextEmbedder, {"query_instruction": "q: ", "prompt_name": "query", "task": "query"}),
        (SentenceTransformersBatchTextEmbedder, {"query_instruction": "q: ", "batch_size": 8, "gpu_ids": [0]}),
        (
            SentenceTransformersDocumentEmbedder,
            {
                "prompt_name": "passage",
                "task": "document",
                "encode_chunk_size": 64,
                "embedding_path": "e.npy",
                "overwrite": True,
            },
        ),
    ],
)
def test_serialization_round_trips_and_keeps_tokens_out(
    cls: type, options: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_do_not_serialize_me")
    embedder = cls(model="some/model", **options)
    data = embedder.to_dict()
    assert all(data["init_parameters"][key] == value for key, value in options.items())
    assert cls.from_dict(data).to_dict() == data
    pipeline = Pipeline()
    pipeline.add_component("embedder", embedder)
    text = pipeline.dumps()
    assert "hf_do_not_serialize_me" not in text
    assert Pipeline.loads(text).get_component("embedder").to_dict() == data


def test_yaml_query_pipeline_embeds_like_the_component(minilm_path: str) -> None:
    pipeline = Pipeline()
    pipeline.add_component(
        "embedder", SentenceTransformersTextEmbedder(model=minilm_path, query_instruction="q: ", progress_bar=False)
    )
    loaded = Pipeline.loads(pipeline.dumps())
    vector = loaded.run({"embedder": {"text": QUERY}})["embedder"]["embedding"]
    np.testing.assert_array_equal(vector, embed(QUERY, model=minilm_path, query_instruction="q: "))


def free_port() -> int:
    """A local TCP port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def online_resolver(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No offline flag, an empty HF cache, and a fresh reachability answer (cleared again afterwards)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    hub_reachable.cache_clear()
    yield monkeypatch
    hub_reachable.cache_clear()


def test_resolver_passes_other_models_and_paths_through(minilm_path: str) -> None:
    assert resolve_model("BAAI/bge-small-en-v1.5") == "BAAI/bge-small-en-v1.5"
    assert resolve_model(minilm_path) == minilm_path


@pytest.mark.parametrize("model", ["sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"])
def test_resolver_uses_the_bundled_minilm_when_offline(model: str, minilm_path: str) -> None:
    assert resolve_model(model) == minilm_path


def test_resolver_uses_the_bundled_minilm_when_the_hub_does_not_answer(
    online_resolver: pytest.MonkeyPatch, minilm_path: str
) -> None:
    online_resolver.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == minilm_path


def test_resolver_keeps_the_hub_id_when_the_hub_answers(online_resolver: pytest.MonkeyPatch) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        online_resolver.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
