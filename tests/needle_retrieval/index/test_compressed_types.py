"""`needle index --index-type sq8 | hnsw-sq8 | ivf-flat | ivf-sq8 | ivf-pq`: the choice and its settings, sized to the
corpus, refused in one line when they cannot fit, recorded in the manifest and the pipeline files, and searched end
to end."""

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from needle_retrieval.cli import main
from needle_retrieval.cli.index_type_flags import add_search_time_flags, index_type_of, search_time_of
from needle_retrieval.cli.parser import parser
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.dense_type import INDEX_TYPES, DenseIndexType
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.templates import fill_search_pipeline
from tests.support.integrity import edit_manifest, live
from tests.support.paths import SAMPLE


def parsed(*flags: str) -> DenseIndexType:
    return index_type_of(parser().parse_args(["index", str(SAMPLE), "--out", "x", *flags]))


@pytest.mark.parametrize(
    ("flags", "factory", "params"),
    [
        (["--index-type", "sq8"], "SQ8", None),
        (["--index-type", "hnsw-sq8", "--hnsw-m", "16", "--ef-search", "80"], "HNSW16,SQ8",
         {"efConstruction": 128, "efSearch": 80}),
        (["--index-type", "ivf-flat", "--nlist", "100", "--nprobe", "8"], "IVF100,Flat", {"nprobe": 8}),
        (["--index-type", "ivf-sq8", "--nlist", "100"], "IVF100,SQ8", {"nprobe": 16}),
        (["--index-type", "ivf-pq", "--nlist", "256", "--pq-m", "48"], "IVF256,PQ48", {"nprobe": 16}),
    ],
)  # fmt: skip
def test_flags_choose_the_faiss_factory_and_search_settings(
    flags: list[str], factory: str, params: dict[str, int] | None
) -> None:
    choice = parsed(*flags)
    assert (choice.factory(), choice.search_params()) == (factory, params)
    assert DenseIndexType.from_recorded(json.loads(json.dumps(choice.recorded()))) == choice


def test_only_the_types_own_settings_are_recorded() -> None:
    assert parsed("--index-type", "ivf-flat", "--nlist", "64").recorded() == {
        "kind": "ivf-flat", "nlist": 64, "nprobe": 16,
    }  # fmt: skip
    assert parsed("--index-type", "sq8").recorded() == {"kind": "sq8"}
    assert parsed().recorded() is None


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--index-type", "sq8", "--nlist", "8"], "--nlist only apply to --index-type ivf-flat or ivf-sq8 or ivf-pq"),
        (["--index-type", "ivf-flat", "--pq-m", "8"], "--pq-m only apply to --index-type ivf-pq"),
        (["--index-type", "ivf-pq", "--ef-search", "8"], "--ef-search only apply to --index-type hnsw or hnsw-sq8"),
        (["--index-type", "ivf-flat", "--nlist", "8", "--nprobe", "9"], "--nprobe 9 is more than the 8 lists"),
    ],
)
def test_settings_that_do_not_fit_the_type_are_named(flags: list[str], named: str) -> None:
    with pytest.raises(NeedleError, match=named):
        parsed(*flags)


def test_nlist_is_sized_to_the_training_sample_and_refused_beyond_it() -> None:
    assert DenseIndexType("ivf-flat").fitted(1_000_000, 10_240).nlist == 262  # 10,240 / 39
    assert DenseIndexType("ivf-flat").fitted(10_000, 10_240).nlist == 100  # sqrt(10,000)
    assert DenseIndexType("ivf-flat", nprobe=16).fitted(100, 10_240).nprobe == 2  # 100 / 39 lists
    with pytest.raises(NeedleError, match=r"--nlist 4096 needs 159,744 training vectors .* use --nlist <= 262"):
        DenseIndexType("ivf-flat", nlist=4096).fitted(1_000_000, 10_240)
    with pytest.raises(NeedleError, match="ivf-pq trains 256 codes per sub-vector on at least 9,984 vectors"):
        DenseIndexType("ivf-pq").fitted(5_000, 10_240)
    with pytest.raises(NeedleError, match="needs at least 39 documents, got 20"):
        DenseIndexType("ivf-flat").fitted(20, 10_240)
    assert DenseIndexType("sq8").fitted(20, 10_240) == DenseIndexType("sq8")


def test_pq_m_must_divide_the_dimension() -> None:
    DenseIndexType("ivf-pq", pq_m=48).check_dimension(384)
    with pytest.raises(NeedleError, match="--pq-m 64 must divide the embedding dimension 100: one of 1, 2, 4, 5"):
        DenseIndexType("ivf-pq").check_dimension(100)


@pytest.mark.parametrize("source", ["model", "embeddings"])
def test_needle_index_refuses_a_pq_m_that_does_not_divide_the_dimension_before_building(
    tmp_path: Path, source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dimension is known before any work: from --embeddings' header, or from the model's files (MiniLM: 384)."""
    corpus = tmp_path / "corpus.jsonl"
    count = 10_000  # enough to train PQ codebooks, so only the dimension can refuse it
    corpus.write_text("".join(json.dumps({"id": str(i), "contents": f"passage {i}"}) + "\n" for i in range(count)))
    flags = ["--index-type", "ivf-pq", "--pq-m", "100"]
    if source == "embeddings":
        np.save(tmp_path / "vectors.npy", np.zeros((count, 384), dtype=np.float32))
        flags += ["--embeddings", str(tmp_path / "vectors.npy")]
    assert main(["index", str(corpus), "--out", str(tmp_path / "index"), *flags]) == 2
    assert "--pq-m 100 must divide the embedding dimension 384: one of 1, 2, 3, 4, 6, 8" in capsys.readouterr().err
    assert not (tmp_path / "index").exists()


def test_search_time_flags_override_the_recorded_setting_of_their_type_only() -> None:
    recorded = DenseIndexType("ivf-flat", nlist=64)
    search = argparse.ArgumentParser()
    add_search_time_flags(search)
    args = search.parse_args(["--nprobe", "32"])
    assert search_time_of(args, recorded).search_params() == {"nprobe": 32}
    with pytest.raises(NeedleError, match="--ef-search applies to hnsw or hnsw-sq8 indexes; this index is ivf-flat"):
        recorded.with_search(ef_search=100)


@pytest.mark.parametrize(
    "record",
    [
        {"kind": "ivf-flat", "nlist": 0, "nprobe": 1},  # out of range
        {"kind": "ivf-flat", "nlist": 4, "nprobe": 9},  # more probes than lists
        {"kind": "ivf-flat", "nlist": None, "nprobe": 1},  # never recorded unsized
        {"kind": "sq8", "nlist": 4},  # a setting of another type
        {"kind": "flat"},  # flat is recorded as no dense_index at all
        {"kind": "pq"},
    ],
)
def test_bad_recorded_types_are_refused(record: dict[str, object]) -> None:
    with pytest.raises(NeedleError):
        DenseIndexType.from_recorded(record)


def test_every_type_is_offered_by_needle_index() -> None:
    for kind in INDEX_TYPES:
        assert parsed("--index-type", kind).kind == kind


@pytest.fixture(scope="module")
def sq8_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sq8") / "index"
    assert main(["index", str(SAMPLE), "--out", str(out), "--bm25", "--index-type", "sq8"]) == 0
    return out


def test_needle_index_builds_and_searches_an_sq8_index(sq8_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert json.loads((live(sq8_index) / "manifest.json").read_text())["dense_index"] == {"kind": "sq8"}
    lines = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()][::23]
    queries = [f"{line['title']} {line['contents'][:120]}" for line in lines]
    capsys.readouterr()
    assert main(["search", str(sq8_index), *queries, "--mode", "dense", "--json"]) == 0
    tops = [hits[0]["id"] for hits in json.loads(capsys.readouterr().out)]
    assert sum(top == line["id"] for top, line in zip(tops, lines, strict=True)) >= len(lines) - 2
    data = fill_search_pipeline(sq8_index, IndexManifest.load(sq8_index), "dense")
    stores = [c["init_parameters"].get("document_store", {}) for c in data["components"].values()]
    assert [s["init_parameters"]["index_factory"] for s in stores if "FAISS" in s.get("type", "")] == ["SQ8"]


def test_a_tampered_type_in_the_manifest_is_refused(
    sq8_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resealed so only the reader's checks stand: an IVF type the store was not built as is refused, not searched."""
    copy = tmp_path / "index"
    shutil.copytree(sq8_index, copy)
    edit_manifest(live(copy) / "manifest.json", lambda m: m.update(dense_index={"kind": "sq8", "pq_m": 8}))
    assert main(["search", str(copy), "q"]) == 2
    assert "corrupted index manifest" in capsys.readouterr().err
    new = {"kind": "ivf-flat", "nlist": 4, "nprobe": 2}  # well formed, but not the index the store holds
    edit_manifest(live(copy) / "manifest.json", lambda m: m.update(dense_index=new))
    assert main(["search", str(copy), "q", "--mode", "dense"]) != 0
    err = capsys.readouterr().err
    assert "the store was built with index_factory='SQ8'" in err


def test_needle_search_nprobe_trades_recall_for_one_search(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`needle search --nprobe N` searches an IVF index with N lists instead of the recorded number (no rebuild):
    all of them answer as exactly as flat, one list loses some hits; a flag of another type is refused by name."""
    out = tmp_path / "index"
    assert main(["index", str(SAMPLE), "--out", str(out), "--index-type", "ivf-flat", "--nlist", "6"]) == 0
    exact = tmp_path / "flat"
    assert main(["index", str(SAMPLE), "--out", str(exact)]) == 0
    queries = ["read and write zip archives", "run code in a separate thread", "parse command line options"]

    def ids(index: Path, *flags: str) -> list[list[str]]:
        capsys.readouterr()
        assert main(["search", str(index), *queries, "--top-k", "10", "--json", *flags]) == 0
        return [[hit["id"] for hit in hits] for hits in json.loads(capsys.readouterr().out)]

    assert ids(out, "--nprobe", "6") == ids(exact)
    assert ids(out, "--nprobe", "1") != ids(exact)
    assert json.loads((live(out) / "manifest.json").read_text())["dense_index"]["nprobe"] != 1  # not rebuilt
    assert main(["search", str(out), "q", "--ef-search", "10"]) == 2
    assert "--ef-search applies to hnsw or hnsw-sq8 indexes; this index is ivf-flat" in capsys.readouterr().err
