"""The index directory `needle index` builds: failed rebuilds change nothing, strangers' directories are refused,
broken indexes are one-line errors.

BM25-only indexes of small slices of the sample corpus keep this module fast; the dense part adds nothing here
except for the embedding-reuse tests at the end.
"""

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from needle_retrieval.cli import main
from tests.support.integrity import edit_manifest
from tests.support.paths import SAMPLE

NEEDLE = str(Path(sys.executable).with_name("needle"))
QUERIES = ["read and write files", "thread", "parse command line arguments"]


def corpus_slice(tmp_path: Path, name: str, start: int, stop: int) -> Path:
    """Lines [start, stop) of the sample corpus as a corpus file of their own."""
    path = tmp_path / name
    path.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[start:stop]), encoding="utf-8")
    return path


def search_json(capsys: pytest.CaptureFixture, index: Path, *extra: str) -> tuple[int, str, str]:
    """`needle search INDEX QUERIES --json` in-process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    status = main(["search", str(index), *QUERIES, "--json", *extra])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line_error(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    """Run argv in-process; it must fail with exit 2 and exactly one `needle: error:` line."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("needle: error: "), err
    return err


def generation(index: Path) -> Path:
    """The live generation directory of an index."""
    return index / (index / "CURRENT").read_text().strip()


@pytest.fixture
def bm25_index(tmp_path: Path) -> Path:
    """A BM25-only index of 40 sample lines."""
    out = tmp_path / "ix"
    corpus = corpus_slice(tmp_path, "a.jsonl", 0, 40)
    assert main(["index", str(corpus), "--out", str(out), "--bm25", "--no-dense"]) == 0
    return out


def test_rebuild_from_a_bad_corpus_leaves_the_old_index_answering_and_no_debris(
    bm25_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    before = search_json(capsys, bm25_index)
    assert before[0] == 0
    assert json.loads(before[1])[0]
    bad = corpus_slice(tmp_path, "bad.jsonl", 100, 130)
    bad.write_text(bad.read_text() + '{"id": "x", "contents": \n', encoding="utf-8")
    err = one_line_error(capsys, ["index", str(bad), "--out", str(bm25_index), "--bm25", "--no-dense", "--overwrite"])
    assert "bad.jsonl" in err
    assert "line 31" in err
    assert search_json(capsys, bm25_index) == before
    assert not list(bm25_index.glob("*.partial"))
    good = corpus_slice(tmp_path, "b.jsonl", 100, 130)
    assert main(["index", str(good), "--out", str(bm25_index), "--bm25", "--no-dense"]) == 0
    after = search_json(capsys, bm25_index)
    assert after[0] == 0
    assert after[1] != before[1]
    assert sorted(p.name for p in bm25_index.iterdir() if p.name.startswith("gen-")) == ["gen-000001", "gen-000002"]


def test_a_full_disk_while_writing_leaves_the_old_index_and_no_debris(
    bm25_index: Path, capsys: pytest.CaptureFixture
) -> None:
    before = search_json(capsys, bm25_index)

    def small_files_only() -> None:  # files may not grow past 16 kB: writes fail with EFBIG, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16_000, 16_000))

    proc = subprocess.run(
        [NEEDLE, "index", str(SAMPLE), "--out", str(bm25_index), "--bm25", "--no-dense"],
        capture_output=True,
        text=True,
        preexec_fn=small_files_only,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "failed, so the live index is unchanged" in proc.stderr
    assert search_json(capsys, bm25_index) == before
    assert not list(bm25_index.glob("*.partial"))


def test_out_naming_a_file_is_refused_and_the_file_kept(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    err = one_line_error(capsys, ["index", str(SAMPLE), "--out", str(target), "--bm25", "--no-dense"])
    assert "is a file" in err
    assert target.read_text() == "mine"


def test_out_in_a_read_only_place_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    if os.geteuid() == 0:  # root writes through permission bits; sysfs refuses everyone
        target = Path("/sys/needle-test-index")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        target = locked / "ix"
    err = one_line_error(capsys, ["index", str(SAMPLE), "--out", str(target), "--bm25", "--no-dense"])
    assert f"cannot write the index directory {target}" in err
    assert not target.exists()


@pytest.mark.parametrize("name", ["holiday.jpg", "needle.json"])  # needle.json: no name of ours, as any other
def test_a_strangers_directory_is_never_written_into(tmp_path: Path, capsys: pytest.CaptureFixture, name: str) -> None:
    stranger = tmp_path / "photos"
    stranger.mkdir()
    (stranger / name).write_bytes(b"\xff\xd8")
    err = one_line_error(capsys, ["index", str(SAMPLE), "--out", str(stranger), "--bm25", "--no-dense"])
    assert f"not empty and not a needle index (it holds {name})" in err
    assert [p.name for p in stranger.iterdir()] == [name]
    assert "is not a needle index: " in one_line_error(capsys, ["search", str(stranger), "thread"])


@pytest.mark.parametrize("holds", [[], ["notes.txt"]])
def test_the_not_an_index_hint_names_a_command_that_then_works(
    tmp_path: Path, capsys: pytest.CaptureFixture, holds: list[str]
) -> None:
    """An empty directory is rebuilt where it is; one holding other files gets a new directory, never itself."""
    directory = tmp_path / "somewhere"
    directory.mkdir()
    for name in holds:
        (directory / name).write_text("mine", encoding="utf-8")
    err = one_line_error(capsys, ["search", str(directory), "thread"])
    suggested = err.rsplit("`needle index CORPUS --out ", 1)[1].strip().rstrip("`")
    target = directory if suggested == str(directory) else tmp_path / "new_index"
    assert (suggested == str(directory)) == (not holds), err
    assert main(["index", str(SAMPLE), "--out", str(target), "--bm25", "--no-dense"]) == 0
    assert main(["search", str(target), "thread", "--mode", "bm25"]) == 0


@pytest.mark.parametrize("leftover", ["CURRENT.tmp", "fusion.json.tmp"])
def test_a_rebuild_accepts_what_an_earlier_version_left_when_killed(
    bm25_index: Path, capsys: pytest.CaptureFixture, leftover: str
) -> None:
    """Earlier versions staged the pointer and the fusion file under fixed names: a build or `needle tune` killed
    mid-switch left one; the index still answers, and a rebuild over it must not take it for a stranger's file."""
    (bm25_index / leftover).write_text("gen-000001\n", encoding="utf-8")
    corpus = corpus_slice(bm25_index.parent, "b.jsonl", 0, 40)
    assert main(["index", str(corpus), "--out", str(bm25_index), "--bm25", "--no-dense", "--overwrite"]) == 0, (
        capsys.readouterr().err
    )
    assert main(["search", str(bm25_index), "thread", "--mode", "bm25"]) == 0


def test_a_store_directory_is_not_taken_for_an_index(bm25_index: Path, capsys: pytest.CaptureFixture) -> None:
    store = generation(bm25_index) / "bm25"
    names = sorted(p.name for p in store.iterdir())
    err = one_line_error(capsys, ["index", str(SAMPLE), "--out", str(store), "--bm25", "--no-dense"])
    assert "not a needle index" in err
    assert sorted(p.name for p in store.iterdir()) == names


def test_an_empty_directory_is_fine(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "empty").mkdir()
    assert (
        main(
            [
                "index",
                str(corpus_slice(tmp_path, "a.jsonl", 0, 10)),
                "--out",
                str(tmp_path / "empty"),
                "--bm25",
                "--no-dense",
            ]
        )
        == 0
    )
    assert any(json.loads(search_json(capsys, tmp_path / "empty")[1]))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda ix: (ix / "CURRENT").write_text("gen-000009\n"), "gen-000009: missing"),
        (lambda ix: (ix / "CURRENT").write_text("garbage\n"), "CURRENT: corrupted"),
        (lambda ix: shutil.rmtree(generation(ix)), "missing"),
        (lambda ix: shutil.rmtree(generation(ix) / "bm25"), "bm25: missing"),  # the manifest records its parts
        (lambda ix: (ix / "CURRENT").unlink(), "is not a needle index"),
    ],
)
def test_a_broken_index_is_a_one_line_error_never_an_empty_answer(
    bm25_index: Path, capsys: pytest.CaptureFixture, damage, message: str
) -> None:
    damage(bm25_index)
    err = one_line_error(capsys, ["search", str(bm25_index), "thread", "--json"])
    assert message in err
    assert "rebuild it with `needle index" in err


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("documents", 41, "lists 41 documents but the store of `retriever` holds 40"),
        ("documents", "many", "documents must be a count"),
        ("modes", ["bm25", "splade"], "modes must list some of dense, bm25, sparse"),
        ("modes", ["bm25", "sparse"], "a sparse part needs the name of its model"),
        ("format", "other", "format 'other' is not supported"),
    ],
)
def test_a_tampered_manifest_is_refused(
    bm25_index: Path, capsys: pytest.CaptureFixture, field: str, value: object, message: str
) -> None:
    edit_manifest(generation(bm25_index) / "manifest.json", lambda manifest: manifest.update({field: value}))
    assert message in one_line_error(capsys, ["search", str(bm25_index), "thread", "--mode", "bm25"])


def test_embeddings_are_carried_over_while_model_and_corpus_match(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    corpus, out = corpus_slice(tmp_path, "a.jsonl", 0, 12), tmp_path / "dense"
    assert main(["index", str(corpus), "--out", str(out)]) == 0
    first = generation(out) / "embeddings.npy"
    assert main(["index", str(corpus), "--out", str(out)]) == 0
    second = generation(out) / "embeddings.npy"
    assert second != first
    assert second.stat().st_ino == first.stat().st_ino  # linked: not re-encoded, not copied
    before = search_json(capsys, out, "--mode", "dense")
    other = corpus_slice(tmp_path, "b.jsonl", 50, 62)
    err = one_line_error(capsys, ["index", str(other), "--out", str(out)])
    assert "rerun with --overwrite" in err
    assert "differ" in err
    assert search_json(capsys, out, "--mode", "dense") == before
    assert not list(out.glob("*.partial"))
    assert main(["index", str(other), "--out", str(out), "--overwrite"]) == 0
    assert (generation(out) / "embeddings.npy").stat().st_ino != second.stat().st_ino
    assert search_json(capsys, out, "--mode", "dense")[1] != before[1]
