"""`needle index CORPUS --embeddings FILE.npy`: vectors computed elsewhere are indexed without loading the model for
documents, and the index answers as one that encoded the corpus itself (``needle_retrieval.index.embeddings_in``).

Every build and search is a real CLI run in-process (``needle_retrieval.cli.main``) with the tiny test model; the
outside rows are sentence-transformers' own ``encode`` of the corpus, as a GPU run or UltraRAG's retriever_embed
would write them."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from needle_retrieval.cli import main
from tests.support.brought import QUERIES, Answers, hits, one_line_error, outside_rows, search_json, write_corpus
from tests.support.integrity import live
from tests.support.ultrarag_files import encode_query


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, tiny_model: str) -> tuple[Path, Path, np.ndarray]:
    """(corpus, an index that encoded it itself with --bm25, the corpus's rows as computed outside needle)."""
    root = tmp_path_factory.mktemp("brought")
    corpus = root / "corpus.jsonl"
    contents = write_corpus(corpus)
    encoded = root / "encoded"
    assert main(["index", str(corpus), "--out", str(encoded), "--model", tiny_model, "--bm25"]) == 0
    return corpus, encoded, outside_rows(tiny_model, contents)


def assert_same_answers(found: Answers, expected: Answers) -> None:
    """The same hits in the same order, with the same scores up to float rounding."""
    assert [[hit_id for hit_id, _ in answer] for answer in hits(found)] == [
        [hit_id for hit_id, _ in answer] for answer in hits(expected)
    ]
    np.testing.assert_allclose(
        [score for answer in hits(found) for _, score in answer],
        [score for answer in hits(expected) for _, score in answer],
        atol=1e-5,
    )


def test_brought_embeddings_answer_as_an_encoded_build(
    built: tuple[Path, Path, np.ndarray], tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, encoded, rows = built
    npy = tmp_path / "vectors" / "corpus.npy"
    npy.parent.mkdir()
    np.save(npy, rows)
    before = npy.read_bytes()
    out = tmp_path / "index"
    capsys.readouterr()
    argv = ["index", str(corpus), "--out", str(out), "--model", tiny_model, "--embeddings", str(npy), "--bm25"]
    assert main(argv) == 0
    assert f"needle: indexed 40 embeddings from {npy}" in capsys.readouterr().err
    for mode in ("dense", "bm25", "hybrid"):
        assert_same_answers(search_json(capsys, out, "--mode", mode), search_json(capsys, encoded, "--mode", mode))
    manifest = json.loads((live(out) / "manifest.json").read_text())
    assert (manifest["model"], manifest["dim"], manifest["modes"]) == (tiny_model, 32, ["dense", "bm25"])
    sidecar = json.loads((live(out) / "embeddings.npy.json").read_text())
    assert sidecar["brought_from"] == {"file": "corpus.npy", "dtype": "float32"}
    assert npy.read_bytes() == before  # the user's file is read, never changed
    assert sorted(p.name for p in npy.parent.iterdir()) == ["corpus.npy"]  # and nothing is written beside it


def test_no_model_is_loaded_for_documents_and_a_rebuild_reuses_the_vectors(
    built: tuple[Path, Path, np.ndarray], tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, encoded, rows = built
    model = tmp_path / "model"  # the tiny model without its weights: it cannot be loaded while they are away
    shutil.copytree(tiny_model, model)
    weights = tmp_path / "model.safetensors"
    (model / "model.safetensors").rename(weights)
    npy = tmp_path / "rows.npy"
    np.save(npy, rows)
    out = tmp_path / "index"
    line = one_line_error(capsys, ["index", str(corpus), "--out", str(tmp_path / "encoding"), "--model", str(model)])
    assert "model.safetensors" in line  # encoding needs the weights
    assert main(["index", str(corpus), "--out", str(out), "--model", str(model), "--embeddings", str(npy)]) == 0
    capsys.readouterr()
    assert main(["index", str(corpus), "--out", str(out), "--model", str(model)]) == 0  # rebuilt from its own copy
    assert f"needle: reused 40 embeddings from {out / 'gen-000001' / 'embeddings.npy'}" in capsys.readouterr().err
    weights.rename(model / "model.safetensors")  # the query side loads the model at search time
    assert_same_answers(search_json(capsys, out, "--mode", "dense"), search_json(capsys, encoded, "--mode", "dense"))


def test_float16_rows_are_indexed_as_float32_and_the_file_stays_float16(
    built: tuple[Path, Path, np.ndarray], tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, _, rows = built
    npy = tmp_path / "rows16.npy"
    np.save(npy, rows.astype(np.float16))
    out = tmp_path / "index"
    assert main(["index", str(corpus), "--out", str(out), "--model", tiny_model, "--embeddings", str(npy)]) == 0
    widened = rows.astype(np.float16).astype(np.float32)
    stored = np.load(live(out) / "embeddings.npy")
    assert stored.dtype == np.float32
    np.testing.assert_array_equal(stored, widened)
    assert json.loads((live(out) / "embeddings.npy.json").read_text())["brought_from"]["dtype"] == "float16"
    assert np.load(npy).dtype == np.float16
    ids = [json.loads(line)["id"] for line in corpus.read_text().splitlines()]
    exact = [[ids[i] for i in np.argsort(-(widened @ encode_query(tiny_model, q)))[:5]] for q in QUERIES]
    assert [[hit_id for hit_id, _ in answer] for answer in hits(search_json(capsys, out, "--mode", "dense"))] == exact


def test_a_fortran_ordered_big_endian_file_is_read_row_by_row(
    built: tuple[Path, Path, np.ndarray], tiny_model: str, tmp_path: Path
) -> None:
    corpus, _, rows = built
    for name, matrix in (("fortran.npy", np.asfortranarray(rows)), ("big-endian.npy", rows.astype(">f4"))):
        np.save(tmp_path / name, matrix)
        out = tmp_path / name.removesuffix(".npy")
        argv = ["index", str(corpus), "--out", str(out), "--model", tiny_model, "--embeddings", str(tmp_path / name)]
        assert main(argv) == 0
        np.testing.assert_array_equal(np.load(live(out) / "embeddings.npy"), rows)


def test_milvus_indexes_brought_embeddings(
    built: tuple[Path, Path, np.ndarray], tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, encoded, rows = built
    npy = tmp_path / "rows.npy"
    np.save(npy, rows)
    out = tmp_path / "milvus"
    argv = ["index", str(corpus), "--out", str(out), "--model", tiny_model, "--embeddings", str(npy)]
    assert main([*argv, "--store", "milvus"]) == 0
    assert_same_answers(search_json(capsys, out, "--mode", "dense"), search_json(capsys, encoded, "--mode", "dense"))


def test_a_tampered_generation_of_brought_embeddings_is_refused(
    built: tuple[Path, Path, np.ndarray], tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, _, rows = built
    npy = tmp_path / "rows.npy"
    np.save(npy, rows)
    out = tmp_path / "index"
    assert main(["index", str(corpus), "--out", str(out), "--model", tiny_model, "--embeddings", str(npy)]) == 0
    sidecar = live(out) / "embeddings.npy.json"
    sidecar.write_text(sidecar.read_text().replace('"rows.npy"', '"rowz.npy"'))  # same size: only its bytes tell
    line = one_line_error(capsys, ["search", str(out), "a query"])
    assert line.startswith(f"broken index {out}: {sidecar}: corrupted or changed since it was saved")
