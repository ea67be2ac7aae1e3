"""parameter.yaml's `index_backend_configs.faiss.index_type` and its settings: the FAISS index `needle index
--index-type` chooses, chosen from the file (`needle index --config`, `retriever_index`), refused in the file's
words when wrong, and never silently replaced by a flag given beside --config."""

import json
from pathlib import Path

import pytest
import yaml

from needle_retrieval.cli import main
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.dense_type import DenseIndexType
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.ultrarag.config import load_config
from tests.needle_retrieval.ultrarag.test_config import EXAMPLE, QUERY, workdir

__all__ = ["workdir"]  # the fixture, shared with test_config


def with_faiss(workdir: Path, **keys: object) -> Path:
    """The example parameter file with KEYS added to its index_backend_configs.faiss block."""
    path = workdir / "parameter.yaml"
    data = yaml.safe_load(EXAMPLE.read_text())
    data["index_backend_configs"]["faiss"].update(keys)
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_file_chooses_the_index_type_and_its_settings(workdir: Path) -> None:
    assert load_config(with_faiss(workdir)).index_type == DenseIndexType()  # absent: flat, as before
    config = load_config(with_faiss(workdir, index_type="ivf-sq8", nlist=4))
    assert config.index_type == DenseIndexType("ivf-sq8", nlist=4, nprobe=4)  # nprobe within the 4 lists
    hnsw = load_config(with_faiss(workdir, index_type="hnsw", hnsw_m=16, ef_search=80)).index_type
    assert (hnsw.kind, hnsw.hnsw_m, hnsw.ef_search) == ("hnsw", 16, 80)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"index_type": "ivf"}, "index_backend_configs.faiss.index_type must be one of flat, hnsw, sq8"),
        ({"index_type": "hnsw", "nlist": 8}, "index_backend_configs.faiss.nlist only apply to index_backend_configs"
         ".faiss.index_type ivf-flat or ivf-sq8 or ivf-pq"),
        ({"index_type": "ivf-pq", "pq_m": 0}, r"index_backend_configs.faiss.pq_m must be an integer in \[1, 1024\]"),
        ({"index_type": "sq8", "nprobe": "8"}, "index_backend_configs.faiss.nprobe"),
    ],
)  # fmt: skip
def test_a_wrong_index_type_is_refused_naming_the_key(workdir: Path, keys: dict[str, object], message: str) -> None:
    with pytest.raises(NeedleError, match=message):
        load_config(with_faiss(workdir, **keys))


def test_index_type_flags_beside_config_are_refused_naming_the_key(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(with_faiss(workdir))
    assert main(["index", "--config", config, "--index-type", "sq8"]) == 2
    assert "--index-type cannot be combined with --config: the file's index_backend_configs.faiss.index_type" in (
        capsys.readouterr().err
    )
    assert main(["index", "--config", config, "--ef-search", "40"]) == 2
    assert "index_backend_configs.faiss.ef_search sets it" in capsys.readouterr().err
    assert not (workdir / "index").exists()  # nothing built


@pytest.mark.integration
def test_needle_index_config_builds_the_chosen_type(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = with_faiss(workdir, index_type="sq8")
    assert main(["index", "--config", str(config)]) == 0
    manifest = IndexManifest.load(workdir / "index" / "index.index")
    assert manifest.dense_index == {"kind": "sq8"}
    capsys.readouterr()
    assert main(["search", "--config", str(config), QUERY, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0][0]["id"] == "bz2-0"  # SQ8 keeps the exact answer's top hit
