"""`needle index --embeddings` into the FAISS store builds in one pass (``needle_retrieval.index.brought_build``), and
what it writes is what the build through the document embedder wrote before, byte for byte: the embedding file and
its fingerprint, the document table, the vectors, the manifests, and so every answer.

The earlier build is kept here as the reference: the file copied into the generation first (``bring_in``) with the
fingerprint computed from the corpus beforehand, then ``build_dense``'s pipeline, whose embedder reads the copy.
Both run through the CLI in-process, on a corpus of three chunks, with the tiny test model's dimension (32) and
one FAISS thread (HNSW's graph depends on the order of concurrent inserts).
"""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from components.embedders.embedding_file_foreign import ForeignMatrix
from needle_retrieval.cli import main
from needle_retrieval.index import build as build_module
from needle_retrieval.index import embeddings_in, generation_build
from needle_retrieval.index.embeddings_in import (
    BroughtEmbeddings,
    bring_in,
    corpus_fingerprint,
    document_pipeline,
)
from needle_retrieval.index.parts import build_dense
from tests.support.brought import search_json
from tests.support.integrity import live

PASSAGES = 1_100  # three chunks of the template embedder's 512
WORDS = [f"w{number}" for number in range(40)]  # a vocabulary of 40 words


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A corpus of PASSAGES passages (with titles and a meta field) and one unit row of dimension 32 per passage."""
    root = tmp_path_factory.mktemp("brought_build")
    rng = np.random.default_rng(7)
    corpus = root / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as handle:
        for number in range(PASSAGES):
            words = rng.choice(WORDS, size=12)
            record = {"id": f"d{number}", "title": str(words[0]), "contents": " ".join(words), "year": number % 7}
            handle.write(json.dumps(record) + "\n")
    rows = rng.standard_normal((PASSAGES, 32)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    npy = root / "rows.npy"
    np.save(npy, rows)
    return corpus, npy


def pipeline_build(
    corpus: Path, generation: Path, brought: BroughtEmbeddings, model: str, embedder: Any, *rest: Any
) -> tuple[int, int]:
    """The dense part as it was built before ``brought_build``: the file copied in with the corpus's fingerprint,
    then the index pipeline whose document embedder reads it."""
    chunk_size, index_type, options = rest
    fingerprint = corpus_fingerprint(corpus, document_pipeline(model, brought.matrix.path, embedder, options))
    bring_in(BroughtEmbeddings(brought.matrix, fingerprint), generation)
    return build_dense(corpus, generation, model, False, None, embedder, chunk_size, index_type, options)


def generation_files(index: Path) -> dict[str, bytes]:
    """Every file of INDEX's live generation by relative path, the dense store's manifests without the time they
    were written (a field of each save), and the document table as its rows (its pages are SQLite's)."""
    found = {}
    for path in sorted(live(index).rglob("*")):
        name = str(path.relative_to(live(index)))
        if path.is_dir() or path.name in ("LOCK",):
            continue
        if path.name == "documents.sqlite":
            with sqlite3.connect(path) as db:
                found[name] = repr(db.execute("SELECT * FROM documents ORDER BY row").fetchall()).encode()
            continue
        found[name] = path.read_bytes()
    return found


RANDOM = ("created", "generation_id", "seal", "manifest_sha256")  # when and which save, what seals or digests it
PAGES = "documents.sqlite"  # its size and digest are its pages': linked as built (one pass) or copied (the pipeline)


def without_random(files: dict[str, bytes]) -> dict[str, bytes]:
    """FILES with the manifests' per-save fields (``RANDOM``) and the document table's pages (``PAGES``) dropped,
    at any depth."""

    def cleaned(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: cleaned(item) for key, item in value.items() if key not in (*RANDOM, PAGES)}
        return value

    return {
        name: json.dumps(cleaned(json.loads(data))).encode() if name.endswith("manifest.json") else data
        for name, data in files.items()
    }


@pytest.mark.parametrize("index_type", ["flat", "hnsw"])
def test_one_pass_build_writes_what_the_pipeline_build_wrote(
    files: tuple[Path, Path],
    tiny_model: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    index_type: str,
) -> None:
    corpus, npy = files
    argv = ["--model", tiny_model, "--embeddings", str(npy), "--index-type", index_type, "--threads", "1"]
    assert main(["index", str(corpus), "--out", str(tmp_path / "one_pass"), *argv]) == 0
    with monkeypatch.context() as patched:
        patched.setattr(generation_build, "build_dense_brought", pipeline_build)
        assert main(["index", str(corpus), "--out", str(tmp_path / "pipeline"), *argv]) == 0
    one_pass, pipeline = generation_files(tmp_path / "one_pass"), generation_files(tmp_path / "pipeline")
    assert sorted(one_pass) == sorted(pipeline)
    assert without_random(one_pass) == without_random(pipeline)
    sidecar = json.loads(one_pass["embeddings.npy.json"])
    assert (sidecar["count"], sidecar["brought_from"]) == (PASSAGES, {"file": "rows.npy", "dtype": "float32"})
    answers = [search_json(capsys, tmp_path / index, "--top-k", "20") for index in ("one_pass", "pipeline")]
    assert answers[0] == answers[1]
    assert len(answers[0][0]) == 20


def test_a_changed_corpus_is_refused_and_the_live_index_kept(
    files: tuple[Path, Path], tiny_model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, npy = files
    out = tmp_path / "index"
    assert main(["index", str(corpus), "--out", str(out), "--model", tiny_model, "--embeddings", str(npy)]) == 0
    before = generation_files(out)
    grown = tmp_path / "grown.jsonl"  # one passage more than rows, appended after the rows were counted
    grown.write_bytes(corpus.read_bytes())
    original = embeddings_in.brought_embeddings

    def then_grow(*args: Any, **kwargs: Any) -> BroughtEmbeddings:
        checked = original(*args, **kwargs)
        with grown.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"id": "late", "contents": "added while indexing"}) + "\n")
        return checked

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(build_module, "brought_embeddings", then_grow)
        capsys.readouterr()
        assert main(["index", str(grown), "--out", str(out), "--model", tiny_model, "--embeddings", str(npy)]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"needle: error: --embeddings {npy}: {grown} changed while it was indexed")
    assert generation_files(out) == before
    assert sorted(p.name for p in out.iterdir() if p.name.endswith(".partial")) == []


def test_no_sentence_transformers_import(files: tuple[Path, Path], tiny_model: str, tmp_path: Path) -> None:
    """The build never imports sentence-transformers (seconds and half a GB of memory for nothing)."""
    corpus, npy = files
    out = tmp_path / "index"
    code = (
        "import sys\nfrom needle_retrieval.cli import main\n"
        f"code = main(['index', {str(corpus)!r}, '--out', {str(out)!r}, '--model', {tiny_model!r},"
        f" '--embeddings', {str(npy)!r}])\n"
        "assert code == 0, code\nprint('sentence_transformers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"
    assert live(out).is_dir()


def test_an_ivf_index_trains_on_a_sample_of_the_whole_file_not_its_first_chunk(tmp_path: Path) -> None:
    """A corpus whose topics come in blocks (as a crawl's often do): trained on the first chunk alone, every list's
    centroid would sit in the first topics and the rest of the corpus would pile into a few lists, each query
    then scanning a large share of the corpus. Trained on an even sample of the file, the lists stay balanced."""
    import faiss

    clusters, per, dim = 40, 250, 384
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    vectors = np.repeat(centres, per, axis=0) + 0.05 * rng.standard_normal((clusters * per, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    corpus = tmp_path / "corpus.jsonl"
    lines = (json.dumps({"id": str(i), "contents": f"passage {i}"}) + "\n" for i in range(len(vectors)))
    corpus.write_text("".join(lines))
    np.save(tmp_path / "vectors.npy", vectors)
    out = tmp_path / "index"
    flags = ["--embeddings", str(tmp_path / "vectors.npy"), "--index-type", "ivf-flat", "--chunk-size", "1000"]
    assert main(["index", str(corpus), "--out", str(out), *flags]) == 0
    index = faiss.read_index(str(next((live(out) / "dense").rglob("vectors.faiss"))))
    ivf = faiss.extract_index_ivf(index)
    lists = ivf.invlists
    assert lists is not None
    sizes = [lists.list_size(i) for i in range(ivf.nlist)]
    assert ivf.nlist == 100  # sqrt(10,000), as build_index sized it
    assert max(sizes) <= 3 * per  # about one topic per list; the first chunk's 4 topics would leave lists of ~1,000s


@pytest.mark.parametrize(("index_type", "sampled"), [("flat", False), ("sq8", True)])
def test_only_an_index_that_trains_reads_a_training_sample_of_the_file(
    files: tuple[Path, Path], tiny_model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index_type: str,
    sampled: bool,
) -> None:  # fmt: skip
    """A sample is rows spread over the whole file: at 1M x 384 seconds of page faults, for nothing unless the index
    trains on it."""
    corpus, npy = files
    reads: list[int] = []
    original = ForeignMatrix.sample

    def sample(self: ForeignMatrix, count: int) -> np.ndarray:
        reads.append(count)
        return original(self, count)

    monkeypatch.setattr(ForeignMatrix, "sample", sample)
    argv = ["--model", tiny_model, "--embeddings", str(npy), "--index-type", index_type]
    assert main(["index", str(corpus), "--out", str(tmp_path / "index"), *argv]) == 0
    assert bool(reads) == sampled
