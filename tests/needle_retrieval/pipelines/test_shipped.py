"""The shipped YAML pipelines as a user of the installed package reaches them: `needle pipelines list|show` and
``importlib.resources``, the same bytes as the repository's pipelines/ folder, loadable with ``Pipeline.loads``."""

import json
from importlib.resources import files
from pathlib import Path

import pytest
import yaml
from haystack import Pipeline

import components  # noqa: F401  (allowlists our component types for Pipeline.loads)
from needle_retrieval.cli import main
from needle_retrieval.pipelines import shipped
from tests.support.docs import blocks_of
from tests.support.paths import REPO

IN_REPO = sorted((REPO / "pipelines").glob("*.yaml"))


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    status = main(["pipelines", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_every_file_of_pipelines_is_shipped_under_its_name() -> None:
    assert shipped.names() == [path.stem for path in IN_REPO]
    for path in IN_REPO:
        assert shipped.read(path.stem) == path.read_text(encoding="utf-8")


def test_list_names_each_pipeline_with_what_it_does(capsys: pytest.CaptureFixture) -> None:
    status, out, _ = run(capsys, "list")
    assert status == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == shipped.names()
    bm25 = next(line for line in lines if line.startswith("bm25_search "))
    assert "query -> bm25s -> documents" in bm25


def test_list_json_gives_the_declared_inputs_and_outputs(capsys: pytest.CaptureFixture) -> None:
    status, out, _ = run(capsys, "list", "--json")
    assert status == 0
    entries = {entry["name"]: entry for entry in json.loads(out)}
    assert sorted(entries) == shipped.names()
    assert entries["dense_batch_search"]["inputs"] == ["queries"]
    assert entries["dense_search"]["outputs"] == ["documents"]
    assert all(entry["summary"] for entry in entries.values())


@pytest.mark.parametrize("name", ["bm25_search", "bm25_search.yaml"])
def test_show_prints_the_file_and_it_loads(capsys: pytest.CaptureFixture, name: str) -> None:
    status, out, _ = run(capsys, "show", name)
    assert status == 0
    assert out == (REPO / "pipelines" / "bm25_search.yaml").read_text(encoding="utf-8")
    pipeline = Pipeline.loads(out)
    assert type(pipeline.get_component("retriever")).__name__ == "BM25Retriever"


def test_an_unknown_name_is_one_line_listing_the_names(capsys: pytest.CaptureFixture) -> None:
    status, out, err = run(capsys, "show", "dense")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert "no shipped pipeline named 'dense'" in err
    assert "dense_search" in err


def test_the_documented_importlib_resources_access_reads_the_same_file() -> None:
    text = (files("needle_retrieval.pipelines") / "yaml" / "bm25_search.yaml").read_text(encoding="utf-8")
    assert text == shipped.read("bm25_search")
    assert Path(str(shipped.folder())).resolve() == (REPO / "pipelines").resolve()


def test_the_readme_pipeline_is_the_shipped_hybrid_search_file() -> None:
    """README.md shows hybrid_search.yaml without its comments: the two say the same, or the README has drifted."""
    (readme,) = [block for block in blocks_of(REPO / "README.md") if block.lang == "yaml"]
    assert yaml.safe_load(readme.body) == yaml.safe_load(shipped.read("hybrid_search"))
