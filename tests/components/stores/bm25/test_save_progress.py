"""A BM25 store's save reports how far it is, stage by stage (``save(on_progress=...)``), as `needle index` shows it.

The large store crosses the build's kernel chunk (``matrix.CHUNK`` documents per call) and the documents file's
batch (``SAVE_BATCH``), so the stages report while they go, and its scores show that the chunked passes count and
weigh every document as one pass over all of them would. Each save ends with the sha256 of the files it wrote
(``digesting``), counted in bytes up to their size on disk.
"""

import math
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from components.stores.bm25.document_store import BM25DocumentStore
from components.stores.bm25.generation_files import SAVE_BATCH
from components.stores.bm25.matrix import CHUNK
from components.stores.bm25.persistence import GENERATIONS
from components.stores.faiss.document_store import FAISSDocumentStore
from components.stores.file_digests import DIGESTING

Report = tuple[str, int, int]
BUILD = ["gathering term ids", "counting terms", "weighting terms", "writing the index"]


def stages(reports: list[Report]) -> dict[str, list[int]]:
    """The counts reported per stage, after checking that each stage reports one total, in one run of calls."""
    counts: dict[str, list[int]] = {}
    for stage, done, total in reports:
        assert stage not in counts or counts[stage][-1] <= done, (stage, reports)  # counting up, once
        assert total == reports[[r[0] for r in reports].index(stage)][2], (stage, total)
        counts.setdefault(stage, []).append(done)
    assert list(counts) == list(dict.fromkeys(r[0] for r in reports)), reports  # each stage in one run
    return counts


def documents_stages(reports: list[Report], path: Path) -> dict[str, list[int]]:
    """``stages`` of the REPORTS counting documents, after checking that the last stage is the digesting of every
    byte of the files the generation saved at PATH records (the store's own files, not the FAISS store's)."""
    counts = stages(reports)
    found = GENERATIONS.read_current(path)
    assert found is not None
    total = sum(found[1]["files"].values())
    assert list(counts)[-1] == DIGESTING, reports
    assert {whole for stage, _, whole in reports if stage == DIGESTING} == {total}, reports
    digested = counts.pop(DIGESTING)
    assert (digested[0], digested[-1]) == (0, total), digested
    assert digested == sorted(set(digested)), digested  # in bytes, counting up
    return counts


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Report]]:
    """A store of CHUNK + 1 two-word documents (``alpha`` and a word of its own) saved once; its reports."""
    path = tmp_path_factory.mktemp("large") / "bm25"
    store = BM25DocumentStore(path=str(path), tokenizer="whitespace", autosave=False)
    store.write_documents([Document(id=f"d{i}", content=f"alpha w{i}") for i in range(CHUNK + 1)])
    reports: list[Report] = []
    store.save(on_progress=lambda stage, done, total: reports.append((stage, done, total)))
    return path, reports


def test_a_save_reports_every_stage_from_zero_to_all_documents_while_it_goes(large: tuple[Path, list[Report]]) -> None:
    n = CHUNK + 1
    counts = documents_stages(large[1], large[0])
    assert list(counts) == [*BUILD, "writing documents"]
    assert {stage: (values[0], values[-1]) for stage, values in counts.items()} == dict.fromkeys(counts, (0, n))
    for stage in ("gathering term ids", "counting terms", "weighting terms"):
        assert counts[stage] == [0, CHUNK, n], stage  # per chunk of the build, not only once at its end
    assert counts["writing documents"] == [0, *range(SAVE_BATCH, n, SAVE_BATCH), n]  # per batch written


def test_the_chunked_build_counts_and_weighs_every_document(large: tuple[Path, list[Report]]) -> None:
    store = BM25DocumentStore(path=str(large[0]))
    n = CHUNK + 1
    common = store.bm25_retrieval("alpha", top_k=1)[0].score
    # Lucene BM25, df = n (every document counted, across chunks), tf 1 and dl = avgdl: idf / (k1 + 1)
    assert common == pytest.approx(math.log(1 + 0.5 / (n + 0.5)) / 1.9, rel=1e-5)
    first, last = store.bm25_retrieval("w0", top_k=5), store.bm25_retrieval(f"w{n - 1}", top_k=5)
    assert [d.id for d in first] == ["d0"]
    assert [d.id for d in last] == [f"d{n - 1}"]  # a document of the second chunk, weighted as the first's
    assert np.float32(last[0].score) == np.float32(first[0].score)


def test_a_store_sharing_its_documents_reports_no_documents_stage(tmp_path: Path) -> None:
    words = ["river", "stone", "cloud", "paper", "light"]
    documents = [Document(id=word, content=f"{word} tree", embedding=[1.0, float(i)]) for i, word in enumerate(words)]
    dense = FAISSDocumentStore(path=str(tmp_path / "dense"))
    dense.write_documents(documents)
    store = BM25DocumentStore(path=str(tmp_path / "bm25"), document_store_path=str(tmp_path / "dense"), autosave=False)
    store.write_documents(documents)
    reports: list[Report] = []
    store.save(on_progress=lambda stage, done, total: reports.append((stage, done, total)))
    assert list(documents_stages(reports, tmp_path / "bm25")) == BUILD  # the documents are the FAISS store's
    assert [d.id for d in BM25DocumentStore(path=str(tmp_path / "bm25")).bm25_retrieval("paper", top_k=1)] == ["paper"]


def test_a_compaction_of_a_loaded_store_reports_its_live_documents(tmp_path: Path) -> None:
    path = str(tmp_path / "bm25")
    BM25DocumentStore(path=path).write_documents([Document(id=f"d{i}", content=f"cloud {i}") for i in range(4)])
    store = BM25DocumentStore(path=path, autosave=False)
    store.delete_documents(["d0", "d1"])
    store.write_documents([Document(id="new", content="paper light")])
    reports: list[Report] = []
    store.save(on_progress=lambda stage, done, total: reports.append((stage, done, total)))
    assert {total for stage, _, total in reports if stage != DIGESTING} == {3}  # 2 saved left, 1 new: deleted gone
    assert list(documents_stages(reports, tmp_path / "bm25")) == [*BUILD, "writing documents"]


def test_a_save_with_nothing_to_fold_in_rewrites_the_index_without_a_build(tmp_path: Path) -> None:
    path = str(tmp_path / "bm25")
    BM25DocumentStore(path=path).write_documents([Document(id=f"d{i}", content=f"glass {i}") for i in range(3)])
    reports: list[Report] = []
    BM25DocumentStore(path=path).save(on_progress=lambda stage, done, total: reports.append((stage, done, total)))
    assert documents_stages(reports, tmp_path / "bm25") == {"writing the index": [0, 3], "writing documents": [0, 3]}
