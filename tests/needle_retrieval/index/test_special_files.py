"""Files of an index that someone replaced by a FIFO, a link to a device or a huge file: a search refuses them in one
line at once. Before, a FIFO as fusion.json (or as a generation file) hung `needle search` until a writer came, and
fusion.json linked to /dev/zero was read until memory ran out (it was the one index file whose links were followed).

Each search runs as the console script in a child process with a deadline, so a hang fails the test instead of
stopping the suite.
"""

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.bm25_sample import build_bm25_sample, search_child
from tests.support.integrity import live


def fifo(path: Path) -> None:
    os.mkfifo(path)


def link_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def huge(path: Path) -> None:
    with path.open("wb") as file:
        file.truncate(64 << 20)  # sparse: 64 MiB of zeros on no disk


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bm25_sample(tmp_path_factory.mktemp("special"))


def copy_of(built: Path, tmp_path: Path) -> Path:
    index = tmp_path / "index"
    subprocess.run(["cp", "-a", str(built), str(index)], check=True)
    return index


@pytest.mark.parametrize(
    ("plant", "said"),
    [(fifo, "not a regular file"), (link_to_dev_zero, "a symbolic link"), (huge, "larger than 1,048,576 bytes")],
    ids=["fifo", "link-to-dev-zero", "huge"],
)
def test_fusion_json_that_is_no_plain_small_file_is_one_line(
    built: Path, tmp_path: Path, plant: Callable[[Path], None], said: str
) -> None:
    index = copy_of(built, tmp_path)
    plant(index / "fusion.json")
    done = search_child(index)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{index / 'fusion.json'}: cannot be read" in done.stderr
    assert said in done.stderr


def test_a_generation_file_replaced_by_a_fifo_is_refused_without_waiting(built: Path, tmp_path: Path) -> None:
    index = copy_of(built, tmp_path)
    pipeline = live(index) / "bm25_search.yaml"
    pipeline.unlink()
    fifo(pipeline)
    done = search_child(index)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "bm25_search.yaml" in done.stderr


def test_the_index_as_built_still_answers(built: Path, tmp_path: Path) -> None:
    done = search_child(copy_of(built, tmp_path))
    assert done.returncode == 0, done.stderr
    assert "zipfile" in done.stdout
