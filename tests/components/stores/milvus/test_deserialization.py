"""Milvus pipelines load with plain ``Pipeline.loads`` after ``import components``; Milvus YAML cannot run code.

milvus-haystack's own ``from_dict`` imports any module a serialized ``builtin_function`` names and calls it, so
its types stay off the allowlist; our Milvus store serialises settings only and refuses anything else.
"""

import json
from pathlib import Path

import pytest
import yaml
from haystack import Pipeline
from haystack.core.errors import DeserializationError

import components  # noqa: F401  (the import alone must allowlist what our Milvus pipelines name)
from components.stores.milvus.document_store import MilvusDocumentStore
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines import shipped

MILVUS_PIPELINES = [name for name in shipped.names() if name.startswith("milvus_")]


def popen_gadget(marker: Path) -> dict[str, object]:
    """A serialized 'function' that would create MARKER if anything imported and called it."""
    return {"type": "subprocess.Popen", "init_parameters": {"args": ["touch", str(marker)]}}


def upstream_pipeline(marker: Path) -> str:
    """milvus-haystack's retriever and store, with a builtin_function that runs a command when imported."""
    store = {
        "type": "milvus_haystack.document_store.MilvusDocumentStore",
        "init_parameters": {
            "connection_args": {"uri": str(marker.parent / "m.db")},
            "builtin_function": [popen_gadget(marker)],
        },
    }
    retriever = {
        "type": "milvus_haystack.milvus_embedding_retriever.MilvusEmbeddingRetriever",
        "init_parameters": {"document_store": store},
    }
    return json.dumps({"components": {"retriever": retriever}, "connections": []})


def test_every_milvus_pipeline_loads_without_connecting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert len(MILVUS_PIPELINES) >= 5
    for name in MILVUS_PIPELINES:
        data = pf.load_template(name)
        pipeline = Pipeline.loads(yaml.safe_dump({k: v for k, v in data.items() if k not in ("inputs", "outputs")}))
        assert pipeline.to_dict()["components"]
    assert not list(tmp_path.iterdir()), "loading a pipeline must not open (or create) the Milvus database"


def test_milvus_haystack_types_in_yaml_are_refused_and_run_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(DeserializationError, match="milvus_haystack"):
        Pipeline.loads(upstream_pipeline(marker))
    assert not marker.exists()


def test_our_store_refuses_a_serialized_function(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    data = MilvusDocumentStore(uri=str(tmp_path / "m.db")).to_dict()
    data["init_parameters"]["builtin_function"] = [popen_gadget(marker)]
    with pytest.raises(TypeError, match="builtin_function"):
        MilvusDocumentStore.from_dict(data)
    assert not marker.exists()


def test_store_yaml_names_the_token_variable_never_its_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MILVUS_TOKEN", "root:very-secret")
    text = yaml.safe_dump(MilvusDocumentStore(uri=str(tmp_path / "m.db")).to_dict())
    assert "very-secret" not in text
    assert "MILVUS_TOKEN" in text
