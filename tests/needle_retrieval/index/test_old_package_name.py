"""An index generation built before 0.2.0, whose Hayhooks wrappers import the package by its old name `needle`, is
refused in one line with the rebuild hint (never a traceback), and the rebuild the hint names works over it."""

from pathlib import Path

import pytest

from needle_retrieval.cli import main
from tests.support.integrity import live, reseal
from tests.support.paths import SAMPLE

# What `needle index` 0.1 wrote into each wrapper, and, older still, before the package had its folders.
BASE = "SearchPipelineWrapper"
OLD_IMPORTS = [
    "from needle.serve.hayhooks import SearchPipelineWrapper",
    "from needle.hayhooks_wrapper import SearchPipelineWrapper",
]


def as_built_by_0_1(index: Path, old_import: str) -> None:
    """Give every wrapper of the live generation the old import, its manifest digests recomputed to match: the
    generation is then byte for byte what the old version would have left."""
    generation = live(index)
    for wrapper in generation.glob("hayhooks/*/pipeline_wrapper.py"):
        text = wrapper.read_text().replace(f"from needle_retrieval.serve.hayhooks import {BASE}", old_import)
        assert old_import in text
        wrapper.write_text(text)
        reseal(wrapper, generation)


@pytest.mark.parametrize("old_import", OLD_IMPORTS)
def test_an_index_of_the_old_name_is_refused_then_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture, old_import: str
) -> None:
    index = tmp_path / "ix"
    assert main(["index", str(SAMPLE), "--out", str(index), "--bm25", "--no-dense"]) == 0
    as_built_by_0_1(index, old_import)
    capsys.readouterr()

    assert main(["search", str(index), "zip archives", "--mode", "bm25"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert "imports the package `needle`, renamed `needle_retrieval`" in err
    assert f"rebuild it with `needle index CORPUS --out {index}`" in err

    assert main(["index", str(SAMPLE), "--out", str(index), "--bm25", "--no-dense"]) == 0
    capsys.readouterr()
    assert main(["search", str(index), "zip archives", "--mode", "bm25", "--json"]) == 0
    assert "zipfile" in capsys.readouterr().out
