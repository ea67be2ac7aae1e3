"""`needle index --store milvus --partition-key FIELD`: tenants in the index's Milvus Lite collection.

A corpus of two tenants is indexed once through the CLI (MiniLM from the local cache). The manifest records the
partition key with the store settings, every search pipeline opens the collection with it, and a search filtered
on the tenant returns that tenant's documents only. A tampered manifest is refused naming the setting; a flag or
corpus that does not fit is one line naming the flag or the document, and no index is made. UltraRAG's
parameter.yaml takes the same setting as ``index_backend_configs.milvus.partition_key_field``.
"""

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Pipeline

from needle_retrieval.cli import main
from needle_retrieval.ultrarag.stores import check_index_backend
from tests.support.integrity import edit_manifest, live

TENANTS = {"a": ["river stone", "stone bridge over the river", "a quiet river"], "b": ["river delta", "cloud river"]}
QUERY = "river stone"


def write_corpus(path: Path, tenants: dict[str, list[str]], extra: str = "") -> Path:
    """One line per text, ids ``<tenant><n>``, the tenant under the key ``tenant``; EXTRA appended as is."""
    lines = [
        json.dumps({"id": f"{tenant}{n}", "contents": text, "tenant": tenant})
        for tenant, texts in tenants.items()
        for n, text in enumerate(texts)
    ]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI expecting a user error: exit 2 and exactly one line on stderr, returned."""
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def vectors(path: Path, rows: int) -> list[str]:
    """The --embeddings flag of ROWS random unit vectors of MiniLM's size saved at PATH: the build loads no model."""
    found = np.random.default_rng(0).standard_normal((rows, 384)).astype(np.float32)
    np.save(path, found / np.linalg.norm(found, axis=1, keepdims=True))
    return ["--embeddings", str(path)]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tenants-cli")
    corpus = write_corpus(root / "corpus.jsonl", TENANTS)
    out = root / "index"
    flags = ["--store", "milvus", "--bm25", "--partition-key", "tenant", *vectors(root / "vectors.npy", 5)]
    assert main(["index", str(corpus), "--out", str(out), *flags]) == 0
    return out


def run_bm25(index: Path, filters: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The live generation's bm25_search.yaml, loaded as Hayhooks loads it (the index directory as working
    directory), run with FILTERS and top_k 20 (more than either tenant's share)."""
    monkeypatch.chdir(index)
    pipeline = Pipeline.loads((live(index) / "bm25_search.yaml").read_text())
    try:
        result = pipeline.run({"retriever": {"query": QUERY, "filters": filters, "top_k": 20}})
        return [document.id for document in result["retriever"]["documents"]]
    finally:
        pipeline.get_component("retriever").document_store.close()  # type: ignore[attr-defined]


def test_the_manifest_and_every_search_pipeline_record_the_partition_key(index: Path) -> None:
    manifest = json.loads((live(index) / "manifest.json").read_text())
    assert manifest["store_settings"] == {"partition_key_field": "tenant"}
    for mode in ("dense", "bm25", "hybrid", "rrf"):
        assert "partition_key_field: tenant" in (live(index) / f"{mode}_search.yaml").read_text(), mode


def test_a_tenant_filter_returns_only_that_tenants_documents(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tenant_a = {"field": "meta.tenant", "operator": "==", "value": "a"}
    found = run_bm25(index, tenant_a, monkeypatch)
    assert found
    assert set(found) <= {"a0", "a1", "a2"}
    assert {"b0", "b1"} <= set(run_bm25(index, None, monkeypatch))


def test_needle_search_opens_the_keyed_collection(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["search", str(index), QUERY, "--mode", "bm25", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"partition_key_field": "meta.tenant"}, "store_settings: partition_key_field names the meta key itself"),
        ({"partition_key_field": "tenant", "num_partitions": 0}, "store_settings: num_partitions must be an integer"),
        ({"partition_key_field": "group"}, "has partition key field 'tenant', but partition_key_field is 'group'"),
        (None, "has partition key field 'tenant', but partition_key_field is None"),
    ],
    ids=["meta-prefix", "partitions", "other-key", "removed"],
)
def test_a_tampered_partition_key_is_refused_naming_the_setting(
    index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: dict[str, Any] | None, expected: str
) -> None:
    copy = tmp_path / "index"
    shutil.copytree(index, copy)
    edit_manifest(live(copy) / "manifest.json", lambda manifest: manifest.update({"store_settings": settings}))
    assert expected in one_line_error(capsys, ["search", str(copy), QUERY, "--mode", "bm25"])


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--partition-key", "tenant"], "--partition-key needs --store milvus"),
        (["--store", "milvus", "--partition-key", "bad name"], "--partition-key 'bad name': partition_key_field must"),
        (["--store", "milvus", "--partition-key", "id"], "--partition-key 'id': id, vector, text, sparse, partition"),
    ],
)
def test_a_partition_key_flag_that_does_not_fit_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", TENANTS)
    assert expected in one_line_error(capsys, ["index", str(corpus), "--out", str(tmp_path / "index"), *extra])
    assert not (tmp_path / "index").exists()


def test_a_corpus_line_without_its_tenant_is_named_and_no_index_goes_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", TENANTS, json.dumps({"id": "lost", "contents": "river"}) + "\n")
    argv = ["index", str(corpus), "--out", str(tmp_path / "index"), "--store", "milvus", "--partition-key", "tenant"]
    message = one_line_error(capsys, [*argv, *vectors(tmp_path / "vectors.npy", 6)])
    assert "(id 'lost'): meta['tenant'] is its tenant (partition_key_field)" in message
    assert not (tmp_path / "index" / "CURRENT").exists()


def test_parameter_yaml_takes_the_partition_key_in_the_milvus_block() -> None:
    block = {"milvus": {"uri": "index/milvus.db", "partition_key_field": "tenant", "num_partitions": 8}}
    backend = check_index_backend("milvus", block, None, dense=True, ignored=[])
    assert backend.settings == {"partition_key_field": "tenant", "num_partitions": 8}
    with pytest.raises(ValueError, match=r"index_backend_configs\.milvus: partition_key_field must start"):
        check_index_backend("milvus", {"milvus": {"partition_key_field": "9x"}}, None, dense=True, ignored=[])
