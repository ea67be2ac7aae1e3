"""Every YAML file in pipelines/ loads with plain `Pipeline.loads` and the dense pair runs for real."""

from pathlib import Path

import pytest
import yaml
from haystack import Pipeline

import components  # noqa: F401  (the import alone must allowlist our modules)
from needle import pipeline_files as pf

PIPELINES = sorted(pf.PIPELINES_DIR.glob("*.yaml"))
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "python_docs.jsonl"


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
