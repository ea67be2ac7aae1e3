"""The embedding backend by name (`embedder_spec`), and indexes built with each backend.

The done-when check: a dense index built with sentence-transformers, with the OpenAI-compatible embedders against
a real Infinity server, and with the managed Infinity backend, over the same corpus, answers the same top-10 for
the same queries. One managed Infinity server (leased with the settings the `infinity` spec uses) serves both
server backends, so the module starts it once.
"""

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from haystack.utils import Secret

from components.embedders import InfinityServer, InfinitySettings
from components.embedders.infinity_server import lease, release
from needle_retrieval.index.build import build_index
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.trust import Trust, config_trust
from needle_retrieval.search.searcher import Searcher
from needle_retrieval.ultrarag.embedder_spec import EmbedderSpec, create_embedders, embedder_spec
from tests.support.paths import INFINITY, REPO

QUERIES = ["read and write zip archives", "run code in a separate thread", "parse command line options"]
KEY_ENV = "NEEDLE_TEST_FACTORY_KEY"


@pytest.mark.parametrize(
    ("backend", "block", "message"),
    [
        ("faiss", {}, "backend 'faiss' is not supported; choose one of sentence_transformers, infinity, openai, bm25"),
        ("openai", {"api_key": "abc"}, "backend_configs.openai: option api_key is not supported; allowed: model_name"),
        ("openai", {"concurrency": 0}, r"concurrency must be an integer in \[1, 64\], got 0"),
        ("infinity", {"pooling_method": "max"}, "pooling_method must be one of auto, mean, cls"),
        ("infinity", {"engine": "torch"}, "backend_configs.infinity: option engine is not supported"),
        ("bm25", {"tokenizer": "bert"}, "backend_configs.bm25.tokenizer must be one of auto, default, regex, jieba"),
        ("bm25", {"lang": "zh-cn"}, "backend_configs.bm25.lang must be one of en, english,"),
        (
            "sentence_transformers",
            {"sentence_transformers_encode": {"q_prompt": "query"}},
            "sentence_transformers_encode: option q_prompt is not supported; allowed: normalize_embeddings",
        ),
        ("sentence_transformers", {"sentence_transformers_encode": {"q_prompt_name": ""}}, "prompt_name must be"),
    ],
)
def test_bad_backends_and_options_are_refused_by_name(backend: str, block: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        embedder_spec(backend, "some-model", block)


def test_gpu_ids_belong_to_sentence_transformers() -> None:
    with pytest.raises(ValueError, match="gpu_ids is not supported with backend openai"):
        embedder_spec("openai", "m", {}, gpu_ids=[0])


@pytest.mark.parametrize(
    ("block", "lang", "tokenizer"),
    [
        ({}, "en", "regex:en"),
        ({"lang": "zh"}, "zh", "jieba:zh"),
        ({"tokenizer": "jieba"}, "en", "regex:en"),  # UltraRAG's jieba is for Chinese text only
        ({"tokenizer": "character"}, "en", "char:en"),
    ],
)
def test_bm25_settings_map_onto_our_store(block: dict[str, str], lang: str, tokenizer: str) -> None:
    spec = embedder_spec("bm25", "", block)
    assert not spec.dense
    assert (spec.bm25_lang(), spec.bm25_tokenizer()) == (lang, tokenizer)
    with pytest.raises(ValueError, match="backend bm25 has no embedders"):
        spec.query_embedder()


@pytest.mark.parametrize(
    ("backend", "block", "query_type", "batch_type"),
    [
        ("sentence_transformers", {}, "SentenceTransformersTextEmbedder", "SentenceTransformersBatchTextEmbedder"),
        ("openai", {"base_url": "http://127.0.0.1:9/v1"}, "OpenAITextEmbedder", "OpenAIBatchTextEmbedder"),
        ("infinity", {"device": "cpu"}, "InfinityTextEmbedder", "InfinityBatchTextEmbedder"),
    ],
)
def test_each_backend_gives_its_embedders(
    backend: str, block: dict[str, str], query_type: str, batch_type: str
) -> None:
    spec = embedder_spec(backend, "m", block, query_instruction="query: ", batch_size=8)
    assert spec.query_embedder()["type"].endswith(f".{query_type}")
    assert spec.query_embedder(batch=True)["type"].endswith(f".{batch_type}")
    document = spec.document_embedder("vectors.npy", overwrite=True)["init_parameters"]
    assert (document["embedding_path"], document["overwrite"], document["batch_size"]) == ("vectors.npy", True, 8)
    assert spec.query_embedder()["init_parameters"]["query_instruction"] == "query: "
    doc, query = create_embedders(backend, "m", block)
    assert type(query).__name__ == query_type
    assert doc.to_dict()["type"] == spec.document_embedder()["type"]


def test_sentence_transformers_options_reach_both_sides() -> None:
    encode = {"normalize_embeddings": False, "q_prompt_name": "query", "psg_prompt_name": "document"}
    encode |= {"encode_chunk_size": 64, "q_task": "query", "psg_task": "document"}
    spec = embedder_spec(
        "sentence_transformers", "m", {"trust_remote_code": True, "sentence_transformers_encode": encode}
    )
    query, document = spec.query_embedder()["init_parameters"], spec.document_embedder()["init_parameters"]
    assert (query["prompt_name"], query["task"], document["prompt_name"], document["task"]) == (
        "query",
        "query",
        "document",
        "document",
    )
    assert document["encode_chunk_size"] == 64
    assert not query["normalize_embeddings"]
    assert query["trust_remote_code"]
    assert "device" not in query  # chosen where the file is loaded, not where it was written


def test_recorded_specs_name_key_variables_never_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-secret-value")
    spec = embedder_spec("openai", "m", {"base_url": "http://127.0.0.1:9/v1"}, api_key=Secret.from_env_var(KEY_ENV))
    recorded = spec.recorded()
    text = json.dumps(recorded) + json.dumps(spec.query_embedder()) + json.dumps(spec.document_embedder())
    assert "sk-secret-value" not in text
    assert KEY_ENV in text
    again = EmbedderSpec.from_recorded(json.loads(json.dumps(recorded)))
    assert again == spec
    assert again.api_key == spec.api_key
    literal = embedder_spec("openai", "m", {}, api_key=Secret.from_token("sk-literal"))
    with pytest.raises(ValueError, match="a literal key cannot be recorded"):
        literal.recorded()


@pytest.mark.parametrize(
    ("recorded", "message"),
    [
        ({"backend": "openai"}, "embedder must be"),
        ({"backend": "openai", "settings": {"model_name_or_path": "m", "module": "os"}}, "option module is not"),
        ({"backend": "openai", "settings": {"model_name_or_path": "m", "api_key": "sk-x"}}, "must name environment"),
        ({"backend": "torch", "settings": {"model_name_or_path": "m"}}, "backend 'torch' is not supported"),
    ],
)
def test_from_recorded_refuses_what_no_build_writes(recorded: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EmbedderSpec.from_recorded(recorded)


# --- the same index through every backend (real models, a real Infinity server) ------------------------------------


@pytest.fixture(scope="module")
def server(minilm_path: str) -> Iterator[InfinityServer]:
    """One managed Infinity server with the settings the `infinity` spec below uses (so it leases this one)."""
    if not INFINITY.exists():
        pytest.skip(
            "Infinity is not installed in .venv-infinity (see tests/components/rankers/test_tei.py for the commands)"
        )
    shared = lease(InfinitySettings(minilm_path, device="cpu", batch_size=4))
    shared.start(timeout=240)
    yield shared
    release(shared)


def top_ten(index: Path, trust: Trust | None = None) -> list[list[str]]:
    """The ids of the dense top-10 of QUERIES from INDEX, searched with what TRUST allows."""
    searcher = Searcher(index, mode="dense", top_k=10, trust=trust)
    try:
        return [[doc.id for doc in docs] for docs in searcher.search(QUERIES)]
    finally:
        searcher.close()


@pytest.mark.integration
def test_every_backend_builds_an_index_with_the_same_top_ten(
    server: InfinityServer, minilm_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join((REPO / "samples" / "python_docs.jsonl").read_text().splitlines(True)[:80]))
    monkeypatch.setenv(KEY_ENV, server.api_key)
    specs = {
        "sentence_transformers": embedder_spec("sentence_transformers", minilm_path, {}, batch_size=4),
        "openai": embedder_spec(
            "openai", minilm_path, {"base_url": server.base_url}, batch_size=4, api_key=Secret.from_env_var(KEY_ENV)
        ),
        "infinity": embedder_spec("infinity", minilm_path, {"device": "cpu"}, batch_size=4),
    }
    answers = {}
    for name, spec in specs.items():
        out = tmp_path / name
        build_index(corpus, out, model=spec.model, overwrite=False, embedder=spec.recorded())
        manifest = IndexManifest.load(out)
        assert manifest.embedder == spec.recorded()
        assert manifest.dim == 384
        search_yaml = (out / manifest.generation / "dense_search.yaml").read_text()
        assert server.api_key not in search_yaml
        answers[name] = top_ten(out, config_trust(spec))  # the user's own spec allows its server and key
    assert [len(set(ids)) for ids in answers["sentence_transformers"]] == [10, 10, 10]
    assert answers["openai"] == answers["sentence_transformers"]
    assert answers["infinity"] == answers["sentence_transformers"]


OLD_NAMES = ["create_embedders", "embedder_spec", "EmbedderSpec", "check_options", "bm25_tokenizer"]


@pytest.mark.parametrize("name", OLD_NAMES)
def test_the_old_module_name_still_answers_with_a_warning_naming_the_new_home(name: str) -> None:
    import components.embedders.embedder_factory as old
    import needle_retrieval.ultrarag_config as face

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(old, name)
    assert [str(w.message) for w in caught] == [f"{old.__name__}.{name} moved to {old.NEW_HOMES_OF[name]}.{name}"]
    assert value is getattr(__import__(old.NEW_HOMES_OF[name], fromlist=[name]), name)
    assert face.create_embedders is __import__(old.NEW_HOMES_OF["create_embedders"], fromlist=["x"]).create_embedders


def test_an_unknown_name_of_the_old_module_is_an_attribute_error() -> None:
    import components.embedders.embedder_factory as old

    with pytest.raises(AttributeError, match="no_such_name"):
        old.no_such_name  # noqa: B018
