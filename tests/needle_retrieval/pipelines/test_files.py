"""Every YAML file in pipelines/ loads with plain `Pipeline.loads`, the dense pair runs for real, a BM25 index names
the document store it reads, and a pipeline written relative to an index directory rebases onto it."""

from pathlib import Path

import pytest
import yaml
from haystack import Pipeline

import components  # noqa: F401  (the import alone must allowlist our modules)
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines import shipped
from tests.support.paths import SAMPLE

PIPELINES = [Path(str(shipped.folder() / f"{name}.yaml")) for name in shipped.names()]


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.name)
def test_pipeline_yaml_loads_and_declares_hayhooks_io(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    pipeline = Pipeline.loads(text)
    data = yaml.safe_load(text)
    assert data["inputs"]
    assert data["outputs"]
    for target in list(data["inputs"].values()) + list(data["outputs"].values()):
        for t in target if isinstance(target, list) else [target]:
            name, _socket = t.split(".", 1)
            assert pipeline.get_component(name) is not None, f"{path.name}: {t} names no component"
    again = Pipeline.loads(pipeline.dumps()).to_dict()
    assert again["components"] == pipeline.to_dict()["components"]
    key = lambda c: (c["sender"], c["receiver"])  # noqa: E731
    assert sorted(again["connections"], key=key) == sorted(pipeline.to_dict()["connections"], key=key)


def test_dense_index_then_dense_search_yaml(tmp_path: Path, minilm_path: str) -> None:
    index = pf.load_template("dense_index")
    pf.set_init_param(index, "embedder.model", minilm_path)
    pf.set_init_param(index, "embedder.embedding_path", str(tmp_path / "emb.npy"))
    pf.set_init_param(index, "writer.document_store.path", str(tmp_path / "dense"))
    written = pf.build(index).run({"reader": {"path": str(SAMPLE)}})
    assert written["writer"]["documents_written"] == sum(1 for _ in SAMPLE.open())

    search = pf.load_template("dense_search")
    pf.set_init_param(search, "embedder.model", minilm_path)
    pf.set_init_param(search, "retriever.document_store.path", str(tmp_path / "dense"))
    pipeline = Pipeline.loads(yaml.safe_dump(search))
    docs = pipeline.run({"embedder": {"text": "compress data with gzip"}})["retriever"]["documents"]
    assert len(docs) == 5
    assert docs[0].id.startswith(("gzip", "zlib"))
    assert all(d.meta["retrieval_type"] == "dense" for d in docs)


def test_a_bm25_index_with_its_own_documents_refuses_a_document_store_path_by_name(tmp_path: Path) -> None:
    """bm25_index.yaml saves the documents with the index; opening it with a dense store's path is a clear
    contradiction (it was a TypeError from Path(None)), and leaving the path unset opens it."""
    from haystack import Document

    from components.stores.bm25.document_store import BM25DocumentStore

    BM25DocumentStore(path=str(tmp_path / "bm25")).write_documents([Document(id="zip", content="zip archives")])
    given = BM25DocumentStore(path=str(tmp_path / "bm25"), document_store_path=str(tmp_path / "dense"))
    with pytest.raises(ValueError, match=r"document_store_path=.*dense' contradicts .* document_store_path=None"):
        given.count_documents()
    assert [d.id for d in BM25DocumentStore(path=str(tmp_path / "bm25")).bm25_retrieval("zip")] == ["zip"]


def test_rebased_resolves_relative_store_places_only(tmp_path: Path) -> None:
    data = pf.load_template("hybrid_search")
    pf.set_init_param(data, "bm25.document_store.document_store_path", "gen-000001/dense")
    pf.set_init_param(data, "dense.document_store.path", "/abs/dense")
    milvus = pf.load_template("milvus_mix_search")
    pf.set_init_param(milvus, "bm25.document_store.uri", "http://milvus.example:19530")
    before = yaml.safe_dump(data)
    moved, served = pf.rebased(data, tmp_path), pf.rebased(milvus, tmp_path)
    bm25 = moved["components"]["bm25"]["init_parameters"]["document_store"]["init_parameters"]
    assert bm25["path"] == str(tmp_path / ".needle/sample/bm25")
    assert bm25["document_store_path"] == str(tmp_path / "gen-000001/dense")
    assert moved["components"]["dense"]["init_parameters"]["document_store"]["init_parameters"]["path"] == "/abs/dense"
    uris = [
        served["components"][c]["init_parameters"]["document_store"]["init_parameters"]["uri"]
        for c in ("dense", "bm25")
    ]
    assert uris == [str(tmp_path / ".needle/milvus/milvus.db"), "http://milvus.example:19530"]
    assert yaml.safe_dump(data) == before  # the given pipeline is left as it was
