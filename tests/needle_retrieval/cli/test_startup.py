"""`needle` answers what needs no index before any heavy import, and a BM25 search imports only what BM25 needs.

Each case runs the real CLI (``needle_retrieval.cli.main``) in a fresh interpreter, then lists the top-level modules
that interpreter loaded: `--help`, `--version`, argument errors and path errors must load no Haystack (which imports
torch) and no numpy; a BM25 search on a BM25-only index loads Haystack, bm25s and numba, but no model library, no
FAISS, no Milvus client, no web SDK and no server framework, with --threads and --batch-size too (setting threads
imports nothing). ``import components`` and ``import needle_retrieval`` are light too, and the deserialization allowlist
still reaches Haystack when it is imported afterwards.
"""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.stores.crash_safe_generations import POINTER
from needle_retrieval.defaults import DISTRIBUTION, INDEX_POINTER
from tests.support.paths import REPO, SAMPLE

HEAVY = {"haystack", "torch", "numpy", "transformers", "scipy", "numba", "bm25s"}
NOT_FOR_BM25 = {
    "transformers", "sentence_transformers", "faiss", "pymilvus", "milvus_lite", "milvus_haystack", "exa_py",
    "tavily", "openai", "zhipuai", "fastapi", "hayhooks", "mcp", "uvicorn", "jieba",
}  # fmt: skip
RUN_CLI = """
import json, sys
from needle_retrieval.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as exit:
    code = exit.code
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted({name.split(".")[0] for name in sys.modules})}, out)
"""


def run_needle(tmp_path: Path, *argv: str) -> tuple[int, set[str], subprocess.CompletedProcess[str]]:
    """Exit status and loaded top-level modules of `needle ARGV` in a fresh interpreter, and its output."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN_CLI, str(report), *argv],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = json.loads(report.read_text())
    return result["code"], set(result["modules"]), done


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus as a BM25-only index (no model)."""
    out = tmp_path_factory.mktemp("startup") / "index"
    argv = [
        sys.executable,
        "-m",
        "needle_retrieval.cli",
        "index",
        str(SAMPLE),
        "--out",
        str(out),
        "--bm25",
        "--no-dense",
    ]
    subprocess.run(argv, cwd=REPO, check=True, capture_output=True, timeout=300)
    return out


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["index", "--help"], ["tune", "--help"]])
def test_help_loads_no_haystack_torch_or_numpy(tmp_path: Path, argv: list[str]) -> None:
    code, modules, done = run_needle(tmp_path, *argv)
    assert code == 0
    assert "usage: needle" in done.stdout
    assert not modules & HEAVY, sorted(modules & HEAVY)


def test_version_names_the_installed_distribution_without_heavy_imports(tmp_path: Path) -> None:
    code, modules, done = run_needle(tmp_path, "--version")
    assert code == 0
    assert done.stdout.strip() == f"needle {importlib.metadata.version(DISTRIBUTION)}"
    assert not modules & HEAVY, sorted(modules & HEAVY)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", "{index}", "q", "--top-k", "0"], "argument --top-k: must be an integer in [1, 10000], got 0"),
        (["search", "{index}", "q", "--bogus"], "unrecognized arguments: --bogus"),
        (["index", "{corpus}", "--out", "{out}", "--chunk-size", "0"], "argument --chunk-size: must be an integer"),
        (["index", "{corpus}", "--out", "{out}", "--batch-size", "0"], "argument --batch-size: must be an integer"),
        (["search", "{index}", "q", "--threads", "0"], "argument --threads: must be an integer in [1, 1024], got 0"),
        (["search", "{index}", " "], "QUERY"),
        (["search", "{missing}", "q"], "index directory not found: {missing}"),
        (["search", "{out}", "q"], "is not a needle index: {out}/CURRENT is missing"),
        (["index", "{missing}", "--out", "{out}"], "corpus not found: {missing}"),
    ],
)
def test_argument_and_path_errors_are_one_line_before_heavy_imports(
    tmp_path: Path, bm25_index: Path, argv: list[str], message: str
) -> None:
    places = {"index": bm25_index, "corpus": SAMPLE, "out": tmp_path, "missing": tmp_path / "missing"}
    code, modules, done = run_needle(tmp_path, *(arg.format(**places) for arg in argv))
    assert code == 2
    assert message.format(**places) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not modules & HEAVY, sorted(modules & HEAVY)


@pytest.mark.parametrize("flags", [[], ["--threads", "1", "--batch-size", "1"]])
def test_bm25_search_loads_only_what_bm25_needs(tmp_path: Path, bm25_index: Path, flags: list[str]) -> None:
    argv = ["search", str(bm25_index), "sort a list in place", "--mode", "bm25", *flags]
    code, modules, done = run_needle(tmp_path, *argv)
    assert code == 0, done.stderr
    assert "[bm25]" in done.stdout
    assert " 1. " in done.stdout
    assert not modules & NOT_FOR_BM25, sorted(modules & NOT_FOR_BM25)


def test_package_imports_are_light_and_the_allowlist_still_reaches_haystack() -> None:
    code = """
import sys
import components, needle_retrieval
light = not {"haystack", "torch"} & set(sys.modules)
from needle_retrieval import Searcher, build_index
from haystack import Pipeline
yaml = "components:\\n  mix:\\n    type: components.rankers.mix_retrieve_ranker.MixRetrieveRanker\\nconnections: []\\n"
print(light, Searcher.__module__, build_index.__module__, type(Pipeline.loads(yaml).get_component("mix")).__name__)
"""
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv, check=False, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == [
        "True",
        "needle_retrieval.search.searcher",
        "needle_retrieval.index.build",
        "MixRetrieveRanker",
    ], done.stderr


def test_the_light_pointer_name_is_the_stores_own() -> None:
    assert INDEX_POINTER == POINTER


def test_the_package_names_its_python_entry_points() -> None:
    """``from needle_retrieval import ...`` reaches the classes a Python user passes around, wherever their modules
    live."""
    import needle_retrieval
    from needle_retrieval.pipelines.fusion import FusionSetting

    assert sorted(needle_retrieval.__all__) == [
        "FusionSetting",
        "IndexManifest",
        "NeedleError",
        "Searcher",
        "Trust",
        "build_index",
    ]
    assert needle_retrieval.FusionSetting is FusionSetting
    assert {name for name in dir(needle_retrieval) if not name.startswith("_")} >= set(needle_retrieval.__all__)
