"""`needle index --embeddings FILE.npy` refuses, in one line naming the file and exit status 2, every file that does
not fit the corpus and the model, and every flag that does not go with it; nothing is indexed, and a live index
stays live and unchanged (``needle_retrieval.index.embeddings_in``)."""

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from needle_retrieval.cli import main
from tests.support.brought import hits, one_line_error, outside_rows, search_json, write_corpus
from tests.support.integrity import live


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus of 40 `contents` passages."""
    path = tmp_path_factory.mktemp("refusals") / "corpus.jsonl"
    write_corpus(path)
    return path


@pytest.fixture(scope="module")
def rows(corpus: Path, tiny_model: str) -> np.ndarray:
    """The corpus's rows as an outside encoder computes them with the tiny model (dimension 32)."""
    return outside_rows(tiny_model, write_corpus(corpus.with_name("copy.jsonl")))


@pytest.fixture(autouse=True)
def no_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """The error line alone on stderr, no progress lines before it."""
    monkeypatch.setenv("NEEDLE_PROGRESS_INTERVAL", "off")


def with_bad_row(rows: np.ndarray, row: int, value: float) -> np.ndarray:
    """ROWS with VALUE in one place of ROW."""
    changed = rows.copy()
    changed[row, 3] = value
    return changed


BAD_MATRICES: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "rows": (lambda r: r[:39], "holds 39 rows, but the corpus has 40 documents"),
    "1-D": (lambda r: r.ravel(), "holds a 1-D float32 array; embeddings are a 2-D float32 or float16 matrix"),
    "int": (lambda r: r.astype(np.int64), "holds a 2-D int64 array; embeddings are a 2-D float32 or float16 matrix"),
    "float64": (lambda r: r.astype(np.float64), "holds a 2-D float64 array"),
    "dimension": (lambda r: r[:, :16], "holds 16-dimensional rows, but the model gives 32"),
    "nan": (lambda r: with_bad_row(r, 7, np.nan), "holds NaN or infinity in row 7"),
    "inf": (lambda r: with_bad_row(r, 33, -np.inf), "holds NaN or infinity in row 33"),
}


@pytest.mark.parametrize("case", list(BAD_MATRICES))
def test_a_matrix_that_does_not_fit_is_refused_naming_the_file(
    corpus: Path, rows: np.ndarray, tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    make, problem = BAD_MATRICES[case]
    npy = tmp_path / "rows.npy"
    np.save(npy, make(rows))
    out = tmp_path / "index"
    argv = ["index", str(corpus), "--out", str(out), "--model", tiny_model, "--embeddings", str(npy)]
    line = one_line_error(capsys, argv)
    assert line.startswith(f"--embeddings {npy} {problem}")
    assert not (out / "CURRENT").exists()
    assert (sorted(p.name for p in out.iterdir()) if out.exists() else []) in ([], ["LOCK"])  # no generation at all


@pytest.mark.parametrize(
    ("write", "problem"),
    [
        (lambda path: path.write_text("not numpy"), "is not a readable .npy file (the magic string is not correct"),
        (lambda path: path.write_bytes(b"\x93NUMPY" + bytes(20)), "is not a readable .npy file"),
        (lambda path: None, "is not a readable .npy file ([Errno 2] No such file or directory"),
    ],
    ids=["text", "bad-header", "missing"],
)
def test_a_file_that_is_not_a_readable_npy_is_refused(
    corpus: Path,
    tiny_model: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    write: Callable[[Path], object],
    problem: str,
) -> None:
    npy = tmp_path / "rows.npy"
    write(npy)
    line = one_line_error(
        capsys, ["index", str(corpus), "--out", str(tmp_path / "i"), "--model", tiny_model, "--embeddings", str(npy)]
    )
    assert line.startswith(f"--embeddings {npy} {problem}")


def test_a_truncated_file_is_refused_before_anything_is_read(
    corpus: Path, rows: np.ndarray, tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    npy = tmp_path / "rows.npy"
    np.save(npy, rows)
    npy.write_bytes(npy.read_bytes()[:-10])
    line = one_line_error(
        capsys, ["index", str(corpus), "--out", str(tmp_path / "i"), "--model", tiny_model, "--embeddings", str(npy)]
    )
    assert line == f"--embeddings {npy} is not a readable .npy file (its header promises 5,248 bytes, it holds 5,238)"


def test_a_refused_file_leaves_the_live_index_answering_unchanged(
    corpus: Path, rows: np.ndarray, tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    npy = tmp_path / "rows.npy"
    np.save(npy, rows)
    out = tmp_path / "index"
    argv = ["index", str(corpus), "--out", str(out), "--model", tiny_model, "--embeddings", str(npy)]
    assert main(argv) == 0
    before = hits(search_json(capsys, out, "--mode", "dense"))
    np.save(npy, with_bad_row(rows, 39, np.nan))  # found while it is copied into the new generation
    assert one_line_error(capsys, argv) == f"--embeddings {npy} holds NaN or infinity in row 39"
    assert sorted(p.name for p in out.iterdir()) == ["CURRENT", "LOCK", "gen-000001"]
    assert hits(search_json(capsys, out, "--mode", "dense")) == before


def test_needle_embeddings_of_another_model_are_refused_by_their_fingerprint(
    corpus: Path, tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = tmp_path / "own"
    assert main(["index", str(corpus), "--out", str(own), "--model", tiny_model]) == 0
    npy = tmp_path / "needle.npy"
    shutil.copy(live(own) / "embeddings.npy", npy)
    shutil.copy(live(own) / "embeddings.npy.json", f"{npy}.json")
    other = tmp_path / "other-model"  # the same files under another name: another model as far as anyone can tell
    shutil.copytree(tiny_model, other)
    argv = ["index", str(corpus), "--out", str(tmp_path / "i"), "--embeddings", str(npy)]
    line = one_line_error(capsys, [*argv, "--model", str(other)])
    assert line.startswith(f"--embeddings {npy} was embedded for something else: model: file has '{tiny_model}'")
    assert line.endswith("(as needle.npy.json says: delete that file to index the rows as they are)")
    assert main([*argv, "--model", tiny_model]) == 0  # its own model: taken as it is
    Path(f"{npy}.json").unlink()
    assert main([*argv, "--model", str(other)]) == 0  # the user vouches for the rows


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--multimodal"], "--embeddings cannot be combined with --multimodal"),
        (["--no-dense", "--bm25"], "--embeddings are the dense part's vectors: --no-dense indexes none"),
        (["--overwrite"], "--overwrite re-encodes the corpus, but --embeddings brings its vectors"),
        (["--batch-size", "8"], "--batch-size sets the document embedder's batch: with --embeddings nothing is"),
    ],
    ids=["multimodal", "no-dense", "overwrite", "batch-size"],
)
def test_flags_that_do_not_go_with_embeddings_are_refused(
    corpus: Path, rows: np.ndarray, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], problem: str
) -> None:
    npy = tmp_path / "rows.npy"
    np.save(npy, rows)
    out = tmp_path / "index"
    line = one_line_error(capsys, ["index", str(corpus), "--out", str(out), "--embeddings", str(npy), *flags])
    assert line.startswith(problem)
    assert not out.exists()


def test_embeddings_with_a_parameter_file_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["index", "--config", str(tmp_path / "parameter.yaml"), "--embeddings", "x.npy"])
    assert line == "--embeddings cannot be combined with --config: the file's embedding_path names them"
