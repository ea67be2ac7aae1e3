"""`needle index --index-type hnsw`: an HNSW dense part that `needle search` (and serve's pipelines) answer from
like a flat one, its settings recorded and kept, bad flags refused in one line; HNSW deletes stay excluded."""

import json
import shutil
from pathlib import Path

import faiss
import numpy as np
import pytest
from haystack import Document

from components.stores import FAISSDocumentStore
from needle_retrieval.cli import main
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.templates import fill_search_pipeline
from tests.support.integrity import edit_manifest
from tests.support.paths import SAMPLE

HNSW_FLAGS = ["--index-type", "hnsw", "--hnsw-m", "16", "--ef-construction", "40", "--ef-search", "48"]


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sample corpus indexed twice (dense + BM25): flat (the default) and HNSW, the second reusing embeddings."""
    root = tmp_path_factory.mktemp("hnsw")
    assert main(["index", str(SAMPLE), "--out", str(root / "flat"), "--bm25"]) == 0
    shutil.copytree(root / "flat", root / "hnsw")  # the rebuild reuses the embeddings: no second encoding
    assert main(["index", str(SAMPLE), "--out", str(root / "hnsw"), "--bm25", *HNSW_FLAGS]) == 0
    return root / "flat", root / "hnsw"


def search_json(capsys: pytest.CaptureFixture, index: Path, *argv: str) -> list:
    capsys.readouterr()
    assert main(["search", str(index), *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def live(index: Path) -> Path:
    return index / (index / "CURRENT").read_text().strip()


def graph_of(index: Path) -> faiss.Index:
    """The index saved in the live generation's dense store, unwrapped from the id map FAISS keeps it in."""
    generation = live(index) / "dense"
    current = generation / (generation / "CURRENT").read_text().strip()
    id_map = faiss.read_index(str(current / "vectors.faiss"))  # an IndexIDMap2 (the store wraps every index)
    inner = faiss.downcast_index(id_map.index)
    inner.referenced_objects = [id_map]  # faiss's convention: the id map owns `inner` and must outlive it
    return inner


def sample_lines(count: int) -> list[dict]:
    lines = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    return lines[:: len(lines) // count][:count]


def test_hnsw_choice_is_recorded_and_saved_in_the_faiss_index(indexes: tuple[Path, Path]) -> None:
    flat, hnsw = indexes
    recorded = json.loads((live(hnsw) / "manifest.json").read_text())
    assert recorded["dense_index"] == {"kind": "hnsw", "hnsw_m": 16, "ef_construction": 40, "ef_search": 48}
    assert "dense_index" not in json.loads((live(flat) / "manifest.json").read_text())  # flat: as before
    graph = graph_of(hnsw)
    assert isinstance(graph, faiss.IndexHNSWFlat)
    assert (graph.hnsw.efConstruction, graph.hnsw.efSearch) == (40, 48)
    assert graph.ntotal == IndexManifest.load(hnsw).documents


def test_near_duplicate_queries_find_the_same_top_document_as_flat(
    indexes: tuple[Path, Path], capsys: pytest.CaptureFixture
) -> None:
    flat, hnsw = indexes
    lines = sample_lines(12)
    queries = [f"{line['title']} {line['contents'][:120]}" for line in lines]
    from_flat = search_json(capsys, flat, *queries, "--mode", "dense")
    from_hnsw = search_json(capsys, hnsw, *queries, "--mode", "dense")
    assert [hits[0]["id"] for hits in from_hnsw] == [hits[0]["id"] for hits in from_flat]
    assert [hits[0]["id"] for hits in from_hnsw] == [line["id"] for line in lines]


@pytest.mark.parametrize("mode", ["hybrid", "rrf", "bm25"])
def test_every_mode_searches_an_hnsw_index(
    indexes: tuple[Path, Path], capsys: pytest.CaptureFixture, mode: str
) -> None:
    hits = search_json(capsys, indexes[1], "parse command line arguments and options", "--mode", mode)
    assert hits[0]
    assert any(hit["id"].startswith(("argparse", "getopt", "optparse")) for hit in hits[0][:3])


def test_served_pipelines_open_the_store_as_hnsw(indexes: tuple[Path, Path]) -> None:
    hnsw = indexes[1]
    manifest = IndexManifest.load(hnsw)
    for name in ("dense", "hybrid", "rrf", "dense_batch", "hybrid_batch"):
        components = fill_search_pipeline(hnsw, manifest, name)["components"].values()
        stores = [c["init_parameters"].get("document_store", {}) for c in components]
        faiss_stores = [s["init_parameters"] for s in stores if "FAISS" in s.get("type", "")]
        assert faiss_stores == [
            {**faiss_stores[0], "index_factory": "HNSW16", "search_params": {"efConstruction": 40, "efSearch": 48}}
        ], name


def test_rebuild_keeps_hnsw_with_the_flags_and_returns_to_flat_without(
    indexes: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    copy = tmp_path / "index"
    shutil.copytree(indexes[1], copy)
    before = search_json(capsys, copy, "parse command line options", "--mode", "dense")
    assert main(["index", str(SAMPLE), "--out", str(copy), "--bm25", *HNSW_FLAGS]) == 0
    assert IndexManifest.load(copy).dense_index == IndexManifest.load(indexes[1]).dense_index
    assert isinstance(graph_of(copy), faiss.IndexHNSWFlat)
    assert search_json(capsys, copy, "parse command line options", "--mode", "dense") == before
    assert main(["index", str(SAMPLE), "--out", str(copy), "--bm25"]) == 0
    assert IndexManifest.load(copy).dense_index is None
    assert not isinstance(graph_of(copy), faiss.IndexHNSW)
    after = search_json(capsys, copy, "parse command line options", "--mode", "dense")
    assert after[0][0]["id"] == before[0][0]["id"]


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--index-type", "hnsw", "--hnsw-m", "0"], "argument --hnsw-m: must be an integer in [2, 256], got 0"),
        (
            ["--index-type", "hnsw", "--ef-search", "-1"],
            "argument --ef-search: must be an integer in [1, 4096], got -1",
        ),
        (["--index-type", "hnsw", "--ef-construction", "x"], "argument --ef-construction: must be an integer in [8,"),
        (["--index-type", "ivf"], "argument --index-type: invalid choice: 'ivf' (choose from"),
    ],
)
def test_bad_flag_values_are_one_line_errors_naming_flag_and_range(
    tmp_path: Path, capsys: pytest.CaptureFixture, flags: list[str], named: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["index", str(SAMPLE), "--out", str(tmp_path / "ix"), *flags])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert named in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ix").exists()


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--ef-search", "32"], "--ef-search only apply to --index-type hnsw"),
        (["--index-type", "flat", "--hnsw-m", "8", "--ef-search", "9"], "--hnsw-m, --ef-search only apply to"),
        (["--index-type", "hnsw", "--bm25", "--no-dense"], "cannot go with --no-dense"),
        (["--index-type", "hnsw", "--store", "milvus"], "--index-type hnsw is for --store faiss"),
    ],
)
def test_flags_that_do_not_fit_are_refused_before_building(
    tmp_path: Path, capsys: pytest.CaptureFixture, flags: list[str], named: str
) -> None:
    assert main(["index", str(SAMPLE), "--out", str(tmp_path / "ix"), *flags]) == 2
    err = capsys.readouterr().err
    assert named in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ix").exists()


def test_a_tampered_index_type_in_the_manifest_is_named(
    indexes: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    copy = tmp_path / "index"
    shutil.copytree(indexes[1], copy)
    edit_manifest(live(copy) / "manifest.json", lambda recorded: recorded["dense_index"].update(hnsw_m=0))  # resealed
    assert main(["search", str(copy), "q"]) == 2
    err = capsys.readouterr().err
    assert "corrupted index manifest" in err
    assert "--hnsw-m must be an integer in [2, 256], got 0" in err


def test_hnsw_store_excludes_deleted_documents_before_and_after_reload(tmp_path: Path) -> None:
    vectors = np.random.default_rng(0).standard_normal((300, 24)).astype(np.float32)
    documents = [Document(id=f"d{i}", content=f"document {i}") for i in range(300)]
    params = {"efConstruction": 40, "efSearch": 64}
    store = FAISSDocumentStore(path=str(tmp_path / "store"), index_factory="HNSW16", search_params=params)
    store.write_embeddings(documents, vectors)
    deleted = [f"d{i}" for i in range(0, 300, 3)]
    assert store.search(vectors[:1], top_k=1)[0][0].id == "d0"  # its own vector finds it while it is there
    store.delete_documents(deleted)
    for reopened in (store, FAISSDocumentStore.load(str(tmp_path / "store"), search_params=params)):
        found = {doc.id for hits in reopened.search(vectors[:30], top_k=10) for doc in hits}
        assert found
        assert not found & set(deleted)
        assert reopened.search(vectors[1:2], top_k=1)[0][0].id == "d1"


@pytest.mark.parametrize("params", [{"efSearch": -1}, {"efConstruction": 0}, {"efSearch": 2.5}, {"nprobe": True}])
def test_store_refuses_counts_that_faiss_would_take_silently(params: dict) -> None:
    with pytest.raises(ValueError, match=f"search_params\\['{next(iter(params))}'\\] must be an integer >= 1"):
        FAISSDocumentStore(index_factory="HNSW16", search_params=params)
