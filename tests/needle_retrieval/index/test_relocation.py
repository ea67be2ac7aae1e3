"""An index directory is relocatable: after `mv`, `cp -r` or a `tar` round trip (original removed) it searches in
every mode exactly as before, because nothing inside it names the directory it was built in.
"""

import contextlib
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from needle_retrieval.cli import main
from tests.support.paths import SAMPLE

QUERIES = ["read and write ZIP files", "run code in a thread", "parse command line arguments"]
MODES = ("dense", "bm25", "hybrid", "rrf")
pytestmark = pytest.mark.integration


def answers(index: Path) -> dict[str, str]:
    """What `needle search INDEX QUERIES --mode M --json` prints for every mode."""
    printed = {}
    for mode in MODES:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main(["search", str(index), *QUERIES, "--mode", mode, "--json"]) == 0, err.getvalue()
        printed[mode] = out.getvalue()
    return printed


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A dense + BM25 index of 40 sample lines, and its answers in every mode where it was built."""
    root = tmp_path_factory.mktemp("relocate")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:40]), encoding="utf-8")
    index = root / "built-here"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["index", str(corpus), "--out", str(index), "--bm25"]) == 0
    return index, answers(index)


def test_no_file_in_the_index_names_where_it_was_built(built: tuple[Path, dict[str, str]]) -> None:
    index, _ = built
    needles = {str(index).encode(), str(index.resolve()).encode()}
    naming = [
        str(p.relative_to(index))
        for p in index.rglob("*")
        if p.is_file() and p.name != "LOCK" and any(n in p.read_bytes() for n in needles)
    ]
    assert naming == []


def relocate(how: str, source: Path, target: Path) -> None:
    """Move SOURCE to TARGET with `mv`, `cp -r` or a tar archive; the source is gone afterwards."""
    if how == "mv":
        subprocess.run(["mv", str(source), str(target)], check=True)
        return
    if how == "cp -r":
        subprocess.run(["cp", "-r", str(source), str(target)], check=True)
    else:
        archive = target.parent / "index.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(source, arcname=target.name)
        with tarfile.open(archive) as tar:
            tar.extractall(target.parent, filter="tar")
    shutil.rmtree(source)


@pytest.mark.parametrize("how", ["mv", "cp -r", "tar"])
def test_a_relocated_index_searches_in_every_mode_as_before(
    built: tuple[Path, dict[str, str]], tmp_path: Path, how: str
) -> None:
    index, before = built
    copy = tmp_path / "built-here"
    shutil.copytree(index, copy)  # relocate a copy, so each way starts from the index as built
    target = tmp_path / "elsewhere" / "moved"
    target.parent.mkdir()
    relocate(how, copy, target)
    assert answers(target) == before
