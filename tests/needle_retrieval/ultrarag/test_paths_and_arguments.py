"""Where a parameter file's paths point, the values `retriever_init` passes with no file, and `collection_name`.

UltraRAG resolves a relative path against the working directory: its stock layout keeps the file at
servers/retriever/parameter.yaml and means `corpus_path: data/corpus_example.jsonl` from the project root, where
`ultrarag run` starts. needle reads it the same way, so one file names the same files under both tools.
"""

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.ultrarag.config import load_config, search_target
from tests.support.paths import DATA

BM25 = {"backend": "bm25", "backend_configs": {"bm25": {"lang": "en", "save_path": "index/bm25"}}}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """UltraRAG's stock layout, run from its root: servers/retriever/parameter.yaml (HEAD-shaped) and
    data/corpus_example.jsonl."""
    (tmp_path / "data").mkdir()
    shutil.copy(DATA / "ultrarag_corpus_example.jsonl", tmp_path / "data" / "corpus_example.jsonl")
    (tmp_path / "servers" / "retriever").mkdir(parents=True)
    shutil.copy(DATA / "ultrarag_parameter.yaml", tmp_path / "servers" / "retriever" / "parameter.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def with_keys(project: Path, **keys: Any) -> Path:
    """The stock file with top-level KEYS replaced; returns it."""
    path = project / "servers" / "retriever" / "parameter.yaml"
    path.write_text(yaml.safe_dump(yaml.safe_load(path.read_text()) | keys))
    return path


def test_relative_paths_are_read_from_the_working_directory_not_the_files(project: Path) -> None:
    config = load_config(Path("servers/retriever/parameter.yaml"))
    assert config.corpus == project / "data" / "corpus_example.jsonl"
    assert config.embedding_path == project / "embedding" / "embedding.npy"
    assert config.index_dir == project / "index" / "index.index"
    assert load_config(with_keys(project, **BM25)).index_dir == project / "index" / "bm25"


def test_a_tilde_is_expanded_and_an_absolute_path_kept(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, elsewhere = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("elsewhere")
    monkeypatch.setenv("HOME", str(home))
    config = load_config(with_keys(project, corpus_path="~/corpus.jsonl", embedding_path=str(elsewhere / "e.npy")))
    assert config.corpus == home / "corpus.jsonl"
    assert config.embedding_path == elsewhere / "e.npy"


def test_the_stock_layout_indexes_and_searches_from_the_project_root(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`needle index --config servers/retriever/parameter.yaml` from the root, as `ultrarag run` would start it:
    the corpus at data/, the index at index/bm25, nothing beside the file."""
    config = with_keys(project, **BM25)
    assert main(["index", "--config", "servers/retriever/parameter.yaml"]) == 0
    assert IndexManifest.load(project / "index" / "bm25").documents == 7
    assert sorted(p.name for p in config.parent.iterdir()) == ["parameter.yaml"]
    capsys.readouterr()
    assert main(["search", "--config", "servers/retriever/parameter.yaml", "Fresnel lens beam", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0][0]["id"] == "700245#3"


def test_another_working_directory_names_other_files(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from servers/retriever, the same file's corpus is looked for there: the error names that path."""
    with_keys(project, **BM25)
    monkeypatch.chdir(project / "servers" / "retriever")
    capsys.readouterr()
    assert main(["index", "--config", "parameter.yaml"]) == 2
    assert f"corpus not found: {project}/servers/retriever/data/corpus_example.jsonl" in capsys.readouterr().err


# --- load_config(None, values): retriever_init's arguments, no file -------------------------------------------------


def test_arguments_alone_make_a_config_with_the_same_rules(project: Path) -> None:
    config = load_config(None, {"corpus_path": "data/corpus_example.jsonl", **BM25})
    assert (config.path, config.source) == (None, "retriever_init")
    assert config.corpus == project / "data" / "corpus_example.jsonl"
    assert config.index_dir == project / "index" / "bm25"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"backend": "bm25", "backend_configs": {"bm25": {"lang": "klingon"}}},
            "retriever_init: backend_configs.bm25.lang must be one of en, english,",
        ),
        ({"backend": "bm25", "retriever_port": 1}, "retriever_init: arguments: option retriever_port is not supported"),
        ({**BM25, "top_k": "5"}, r"retriever_init: top_k must be an integer in \[1, 10000\], got '5'"),
    ],
)
def test_errors_about_arguments_name_retriever_init(project: Path, values: dict[str, Any], message: str) -> None:
    with pytest.raises(NeedleError, match=f"^{message}"):
        load_config(None, values)


def test_arguments_ultrarag_would_not_read_are_one_warning_naming_retriever_init(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    values = {**BM25, "path": "servers/retriever/src/retriever.py", "index_backend_configs": {"lance": {}}}
    load_config(None, values)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [
        "retriever_init: ignored, as UltraRAG ignores them (not read with these backends): path, "
        "index_backend_configs.lance"
    ]


def test_search_target_without_a_file_says_which_tool_builds_the_index(project: Path) -> None:
    with_keys(project, **BM25)
    assert main(["index", "--config", "servers/retriever/parameter.yaml"]) == 0
    faiss = {"faiss": {"index_path": "index/bm25"}}  # the BM25 index's directory
    dense = load_config(None, {"index_backend_configs": faiss, "model_name_or_path": "m"})
    with pytest.raises(NeedleError, match=r"^retriever_init: backend sentence_transformers names the index .* run "):
        search_target(dense)


# --- collection_name: every backend takes it; Milvus alone uses it ---------------------------------------------------


def test_faiss_and_bm25_ignore_collection_name_as_ultrarag_does(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`collection_name: wiki` (UltraRAG's shipped value), or one Milvus would refuse, changes nothing there."""
    for name in ("wiki", "not a milvus name!"):
        faiss = load_config(with_keys(project, collection_name=name))
        assert (faiss.target.store, faiss.target.collection) == ("faiss", None)
        bm25 = load_config(with_keys(project, collection_name=name, **BM25))
        assert (bm25.target.store, bm25.target.collection) == ("faiss", None)
    assert not [r for r in caplog.records if "collection" in r.getMessage()]


def test_milvus_takes_the_top_level_collection_name_before_the_blocks(project: Path) -> None:
    """UltraRAG's retriever_init puts the top-level collection_name into the Milvus block: it wins."""
    stores = {"milvus": {"uri": "index/milvus_demo.db", "collection_name": "from_block"}}
    both = with_keys(project, index_backend="milvus", collection_name="wiki", index_backend_configs=stores)
    assert load_config(both).target.collection == "wiki"
    block_only = with_keys(project, index_backend="milvus", collection_name=None, index_backend_configs=stores)
    assert load_config(block_only).target.collection == "from_block"
    with pytest.raises(NeedleError, match="collection_name"):
        load_config(with_keys(project, index_backend="milvus", collection_name="not a milvus name!"))


def test_index_flags_the_file_sets_are_refused_beside_config(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "--config", "servers/retriever/parameter.yaml", "--bm25-tokenizer", "lucene"]) == 2
    assert "--bm25-tokenizer cannot be combined with --config: the file's backend_configs.bm25.tokenizer sets it" in (
        capsys.readouterr().err
    )
