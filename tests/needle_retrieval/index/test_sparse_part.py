"""A learned sparse part built beside dense and BM25 (`needle index --sparse MODEL`), searched alone and fused.

Built once per module through ``build_index`` (what `needle index` calls) with the tiny models the tests build:
MiniLM-shaped dense and a SPLADE-shaped sparse encoder, on 20 sample lines.
"""

import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack.core.errors import PipelineRuntimeError
from haystack.document_stores.errors import DocumentStoreError

import components  # noqa: F401  (the import alone allowlists our modules for Pipeline.loads)
from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.eval.index_reuse import fits
from needle_retrieval.index.build import build_index
from needle_retrieval.index.manifest import IndexManifest, file_sha256
from needle_retrieval.index.store_target import StoreChoice
from needle_retrieval.index.templates import fill_search_pipeline, search_pipeline
from needle_retrieval.pipelines import files as pf
from needle_retrieval.tune.command import refuse_sparse_fusion
from tests.support.integrity import edit_manifest, live, reseal
from tests.support.paths import SAMPLE
from tests.support.tiny_splade import tiny_splade_path

QUERY = "read and write ZIP files"


@pytest.fixture(scope="module")
def splade(minilm_path: str) -> str:
    """The tiny SPLADE model's directory."""
    return tiny_splade_path(minilm_path)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 lines of the sample corpus."""
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:20]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, corpus: Path, tiny_model: str, splade: str) -> Path:
    """A dense + BM25 + sparse index of the corpus."""
    out = tmp_path_factory.mktemp("index") / "idx"
    build_index(corpus, out, model=tiny_model, overwrite=False, bm25=True, sparse=splade)
    return out


def run(index: Path, name: str) -> list[Any]:
    """The documents the index's NAME pipeline answers QUERY with (the first query's, for a batch pipeline)."""
    data = fill_search_pipeline(index, IndexManifest.load(index), name)
    key = next(iter(data["inputs"]))
    targets = data["inputs"][key]
    feed: dict[str, dict[str, Any]] = {}
    for target in targets if isinstance(targets, list) else [targets]:
        component, socket = target.split(".", 1)
        feed.setdefault(component, {})[socket] = [QUERY] if key == "queries" else QUERY
    component, socket = data["outputs"]["documents"].split(".")
    found = pf.build(data).run(feed)[component][socket]
    return list(found[0] if key == "queries" else found)


def test_the_sparse_part_is_recorded_and_searched_alone(index: Path, splade: str) -> None:
    """The manifest lists the part and its model; sparse search (single and batch) answers by dot product with the
    part's own vectors, and its hits come with the dense part's documents."""
    manifest = IndexManifest.load(index)
    assert manifest.modes == ["dense", "bm25", "sparse"]
    assert manifest.sparse_model == splade
    assert (live(index) / "sparse_search.yaml").is_file()
    hits = run(index, "sparse")
    assert [d.id for d in hits] == [d.id for d in run(index, "sparse_batch")]
    assert len(hits) == 5
    assert {d.meta["retrieval_type"] for d in hits} == {"sparse"}
    assert all(d.content for d in hits)
    assert [d.score for d in hits] == sorted((d.score for d in hits), reverse=True)
    assert not (live(live(index) / "sparse") / "documents.jsonl").exists()  # read from dense/, stored once


def test_fused_modes_take_the_learned_sparse_side(index: Path) -> None:
    """hybrid and rrf (single and batch) fuse dense with the sparse part, not BM25; BM25 mode is unchanged."""
    manifest = IndexManifest.load(index)
    for name in ("hybrid", "hybrid_batch", "rrf", "rrf_batch"):
        data = search_pipeline(index, manifest, name)
        assert "bm25" not in data["components"]
        assert data["components"]["sparse"]["init_parameters"]["document_store"]["init_parameters"]["path"].endswith(
            "sparse"
        )
        assert [d.id for d in run(index, name)] == [d.id for d in run(index, name.removesuffix("_batch"))]
    sparse_ids = {d.id for d in run(index, "sparse")}
    assert sparse_ids & {d.id for d in run(index, "rrf")}
    assert run(index, "bm25")[0].meta["retrieval_type"] == "sparse"


def test_an_index_without_a_sparse_part_fuses_with_bm25_as_before(tmp_path: Path) -> None:
    """The templates of a dense + BM25 index are untouched (so their scores stay the same)."""
    manifest = IndexManifest(corpus="c.jsonl", documents=1, modes=["dense", "bm25"], model="m", dim=8)
    for name in ("hybrid", "rrf_batch"):
        data = search_pipeline(tmp_path, manifest, name)
        assert "bm25" in data["components"]
        assert "sparse" not in data["components"]


def test_a_sparse_only_index_builds_and_has_no_fused_mode(tmp_path: Path, corpus: Path, splade: str) -> None:
    """`needle index --no-dense --sparse M --batch-size 8`: the batch is the sparse embedder's; one part, documents
    of its own, no hybrid or rrf pipeline."""
    out = tmp_path / "idx"
    assert main(["index", str(corpus), "--out", str(out), "--no-dense", "--sparse", splade, "--batch-size", "8"]) == 0
    assert IndexManifest.load(out).modes == ["sparse"]
    assert sorted(p.name for p in live(out).glob("*_search.yaml")) == ["sparse_search.yaml"]
    assert (live(live(out) / "sparse") / "documents.jsonl").is_file()
    assert run(out, "sparse")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": StoreChoice("milvus")}, "--sparse builds a part beside FAISS and BM25"),
        ({"multimodal": True}, "--sparse encodes text"),
        ({"sparse": " "}, "--sparse needs a SparseEncoder model"),
    ],
)
def test_sparse_where_it_cannot_go_is_refused_by_flag(tmp_path: Path, corpus: Path, kwargs: dict, message: str) -> None:
    """Before anything is built, naming the flag."""
    options: dict[str, Any] = {"sparse": "some/splade", **kwargs}
    with pytest.raises(NeedleError, match=message):
        build_index(corpus, tmp_path / "idx", model="m", overwrite=False, **options)
    assert not (tmp_path / "idx").exists()


def test_eval_and_tune_do_not_take_a_sparse_index_for_a_bm25_one(index: Path, corpus: Path, tiny_model: str) -> None:
    """Its hybrid fuses dense with the sparse part: `needle eval` (which builds none) rebuilds rather than reuse it,
    and `needle tune` (which fits dense + BM25) refuses it in one line instead of fitting the wrong fusion."""
    manifest = IndexManifest.load(index)
    digest = file_sha256(corpus)
    plain = replace(manifest, modes=["dense", "bm25"], sparse_model=None)
    assert fits(plain, digest, "hybrid", tiny_model, "faiss")
    assert not fits(manifest, digest, "hybrid", tiny_model, "faiss")
    with pytest.raises(NeedleError, match=r"^--index-dir .*fuses dense with a learned sparse part[^\n]*$"):
        refuse_sparse_fusion(index)


def copy_of(index: Path, tmp_path: Path) -> Path:
    """A copy of the built index to damage."""
    target = tmp_path / "copy"
    shutil.copytree(index, target, symlinks=True)
    return target


def test_a_tampered_sparse_array_is_refused(index: Path, tmp_path: Path) -> None:
    """Rewritten weights are caught: by the index's own digest of the part, and, with every digest rewritten to
    match, by the sparse store's range check (NaN is no weight)."""
    damaged = copy_of(index, tmp_path)
    data = live(live(damaged) / "sparse") / "data.csc.index.npy"
    weights = np.load(data)
    weights[0] = np.nan
    np.save(data, weights)
    with pytest.raises((DocumentStoreError, PipelineRuntimeError), match=r"data\.csc\.index\.npy"):
        run(damaged, "sparse")
    reseal(data)
    with pytest.raises((NeedleError, DocumentStoreError), match="sparse"):
        IndexManifest.load(damaged)  # the index's manifest still holds the part's former manifest digest
    inner = live(live(damaged) / "sparse") / "manifest.json"
    digest = hashlib.sha256(inner.read_bytes()).hexdigest()
    edit_manifest(live(damaged) / "manifest.json", lambda m: m["stores"]["sparse"].update(manifest_sha256=digest))
    with pytest.raises((DocumentStoreError, PipelineRuntimeError), match=r"data\.csc\.index\.npy: corrupted, values"):
        run(damaged, "sparse")


def test_a_manifest_without_the_sparse_model_is_refused(index: Path, tmp_path: Path) -> None:
    """A sparse part whose model the manifest no longer names cannot be searched: refused naming the field."""
    damaged = copy_of(index, tmp_path)
    edit_manifest(live(damaged) / "manifest.json", lambda m: m.update(sparse_model=None))
    with pytest.raises(NeedleError, match="a sparse part needs the name of its model"):
        IndexManifest.load(damaged)
    assert json.loads((live(index) / "manifest.json").read_text())["sparse_model"]
