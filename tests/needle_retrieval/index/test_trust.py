"""The trust rule on pipelines built from an index: what each kind of setting needs, wherever it sits."""

from typing import Any

import pytest

from needle_retrieval.errors import NeedleError
from needle_retrieval.index.trust import OPENAI_SERVER, Trust, check_pipeline, config_trust
from needle_retrieval.ultrarag.embedder_spec import embedder_spec

ST = "components.embedders.sentence_transformers_text_embedder.SentenceTransformersTextEmbedder"
OPENAI = "components.embedders.openai_text_embedder.OpenAITextEmbedder"
MILVUS = "components.stores.milvus.document_store.MilvusDocumentStore"


def pipeline(**components: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A pipeline dict of COMPONENTS given as name=(type, init_parameters)."""
    return {"components": {name: {"type": t, "init_parameters": p} for name, (t, p) in components.items()}}


def key(*variables: str) -> dict[str, Any]:
    return {"type": "env_var", "env_vars": list(variables), "strict": False}


def milvus_retriever(uri: str, token: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    store = {"type": MILVUS, "init_parameters": {"uri": uri, "token": token or key("MILVUS_TOKEN")}}
    return "components.retrievers.milvus.retriever.MilvusEmbeddingRetriever", {"document_store": store}


REFUSED = [
    (pipeline(embedder=(ST, {"model": "m", "trust_remote_code": True})), "--trust-remote-code m"),
    (pipeline(embedder=(ST, {"model": "m", "model_kwargs": {"trust_remote_code": True}})), "--trust-remote-code m"),
    (pipeline(embedder=(OPENAI, {"base_url": None, "api_key": key("OPENAI_API_KEY")})), OPENAI_SERVER),
    (pipeline(embedder=(OPENAI, {"base_url": "http://h/v1", "api_key": key("OPENAI_API_KEY")})), "http://h/v1"),
    (pipeline(retriever=milvus_retriever("http://milvus:19530")), "--allow-server http://milvus:19530"),
    (pipeline(retriever=milvus_retriever("index/milvus.db", key("AWS_SECRET"))), "--allow-key-env AWS_SECRET"),
]


@pytest.mark.parametrize(("data", "said"), REFUSED)
def test_what_no_permission_allows_is_refused_naming_what_to_pass(data: dict[str, Any], said: str) -> None:
    with pytest.raises(NeedleError, match=f"index D: its component `\\w+` would .*{said}"):
        check_pipeline(data, Trust(), "index D")


ALLOWED = [
    Trust(remote_code_models=("m",)),
    Trust(remote_code_models=("m",)),
    Trust(servers=(OPENAI_SERVER + "/",)),  # a trailing slash names the same server
    Trust(servers=("http://h/v1",)),
    Trust(servers=("http://milvus:19530",)),
    Trust(key_variables=("AWS_SECRET",)),
]


@pytest.mark.parametrize(("case", "trust"), zip(REFUSED, ALLOWED, strict=True))
def test_the_same_settings_pass_once_the_user_allows_them(case: tuple[dict[str, Any], str], trust: Trust) -> None:
    check_pipeline(case[0], trust, "index D")


def test_a_lite_database_a_local_model_and_the_default_variables_need_nothing() -> None:
    data = pipeline(
        embedder=(
            ST,
            {"model": "/models/minilm", "trust_remote_code": False, "token": key("HF_API_TOKEN", "HF_TOKEN")},
        ),
        retriever=milvus_retriever("gen-000001/milvus.db"),
    )
    check_pipeline(data, Trust(), "index D")


def test_another_model_than_the_one_allowed_is_still_refused() -> None:
    data = pipeline(embedder=(ST, {"model": "evil/model", "trust_remote_code": True}))
    with pytest.raises(NeedleError, match="evil/model"):
        check_pipeline(data, Trust(remote_code_models=("good/model",)), "index D")


def test_the_environment_lists_are_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEEDLE_TRUST_REMOTE_CODE", "a/b, c")
    monkeypatch.setenv("NEEDLE_ALLOW_SERVERS", "http://x/v1,,")
    monkeypatch.setenv("NEEDLE_ALLOW_KEY_ENV", " K ")
    assert Trust.from_environment() == Trust(("a/b", "c"), ("http://x/v1",), ("K",))


def test_a_config_allows_what_its_own_embedder_uses() -> None:
    openai = embedder_spec("openai", "m", {"base_url": "http://h/v1"})
    assert config_trust(openai, "http://milvus:19530").servers == ("http://milvus:19530", "http://h/v1")
    code = embedder_spec("sentence_transformers", "org/m", {"trust_remote_code": True})
    assert config_trust(code).remote_code_models == ("org/m",)
    plain = config_trust(embedder_spec("sentence_transformers", "org/m", {}))
    assert (plain.remote_code_models, plain.servers) == ((), ())
