"""`needle index` through a pipe reports the stores' saves stage by stage, the digests of each store's files and
of its generation's as they are hashed, the check of the embeddings a rebuild reuses, and an image index's encode
batch by batch.

Each run is a process of its own whose stderr is read line by line as it comes, with ``NEEDLE_PROGRESS_INTERVAL=0``
so that a line comes with every report however quick these small builds are. The dense part uses a tiny BERT
(hidden size 32, MiniLM's tokenizer), the image index a tiny untrained CLIP (tests/support/clip.py).
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from needle_retrieval.progress import INTERVAL_VARIABLE
from tests.support.clip import PAIRS, build_clip, toy_image
from tests.support.words import write_words_corpus

NEEDLE = str(Path(sys.executable).with_name("needle"))
LINES = 300
WORDS = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "paper", "light", "sound", "tree"]
BM25_BUILD = ["gathering term ids", "counting terms", "weighting terms", "writing the index"]
STAGE = re.compile(r"needle: saving \((\w+)\): ([a-z ]+?) ([\d,]+)/([\d,]+) docs \((\d+)%, .+\)")
BYTES = re.compile(r"needle: ([a-z]+ \(\w+\): [a-z ]+?) ([\d,]+)/([\d,]+) bytes \((\d+)%, .+\)")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 UltraRAG lines of random words."""
    return write_words_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl", LINES)


@pytest.fixture(scope="module")
def hybrid(corpus: Path, tiny_model: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A dense and BM25 index of the corpus (its directory) and the lines its `needle index` wrote."""
    out = tmp_path_factory.mktemp("hybrid") / "ix"
    return out, index_through_a_pipe(str(corpus), "--out", str(out), "--bm25", "--model", tiny_model)


def index_through_a_pipe(*args: str) -> list[str]:
    """Run `needle index ARGS` with stderr on a pipe, reading it line by line while the process runs."""
    env = {**os.environ, INTERVAL_VARIABLE: "0", "HF_HUB_OFFLINE": "1"}
    argv = [NEEDLE, "index", *args]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stderr is not None
        lines = [line.rstrip("\n") for line in iter(proc.stderr.readline, "")]
    assert proc.returncode == 0, "\n".join(lines)
    return lines


def saves(lines: list[str]) -> dict[str, list[tuple[str, int, int]]]:
    """Per part (``dense``, ``BM25``, ``images``), the (stage, done, total) of each save line, in order."""
    found: dict[str, list[tuple[str, int, int]]] = {}
    for line in lines:
        if match := STAGE.fullmatch(line):
            count = (match[2], int(match[3].replace(",", "")), int(match[4].replace(",", "")))
            found.setdefault(match[1], []).append(count)
    return found


def counted_bytes(lines: list[str], step: str) -> list[tuple[int, int, int]]:
    """(line number, done, total) of each line of STEP counted in bytes, e.g. ``saving (dense): digesting``,
    after checking that they count up to their one total, which the last one reaches."""
    found = [
        (i, int(m[2].replace(",", "")), int(m[3].replace(",", "")))
        for i, line in enumerate(lines)
        if (m := BYTES.fullmatch(line)) and m[1] == step
    ]
    assert found, (step, lines)
    assert len({total for _, _, total in found}) == 1, found
    done = [count for _, count, _ in found]
    assert done == sorted(set(done)), done  # counting up, a line per report
    assert done[-1] == found[0][2], found
    return found


def recorded_bytes(generation: Path) -> int:
    """The size of the files the manifest of GENERATION records (a store's or an index's)."""
    return sum(json.loads((generation / "manifest.json").read_text(encoding="utf-8"))["files"].values())


def store_generation(store: Path) -> Path:
    """The live generation of the store in directory STORE (``dense/``, ``bm25/``)."""
    return store / (store / "CURRENT").read_text(encoding="utf-8").strip()


def stage_order(reports: list[tuple[str, int, int]]) -> list[str]:
    """The stages of REPORTS in the order they came, each ending on a line with its whole total done."""
    order = list(dict.fromkeys(stage for stage, _, _ in reports))
    for stage in order:
        assert [(done, total) for name, done, total in reports if name == stage][-1] == (LINES, LINES), reports
    return order


def test_a_hybrid_index_reports_both_saves_stage_by_stage(hybrid: tuple[Path, list[str]]) -> None:
    lines = hybrid[1]
    found = saves(lines)
    assert stage_order(found["dense"]) == ["writing documents", "writing vectors"]
    assert stage_order(found["BM25"]) == BM25_BUILD  # its documents are the dense part's: no file of its own
    encoded = max(i for i, line in enumerate(lines) if line.startswith("needle: indexing (BM25): "))
    first_save = min(i for i, line in enumerate(lines) if line.startswith("needle: saving (BM25): "))
    assert encoded < first_save, lines  # the save is a step after the corpus was read, shown as it happens


def test_an_index_reports_the_digests_of_its_generation_s_files(hybrid: tuple[Path, list[str]]) -> None:
    out, lines = hybrid
    digests = counted_bytes(lines, "saving (generation): digesting")
    # embeddings.npy, its fingerprint, the search pipelines: bytes, not documents (the stores count their own)
    assert digests[0][2] == recorded_bytes(out / "gen-000001")
    assert len(digests) > 1, digests
    last_save = max(
        i for i, line in enumerate(lines) if line.startswith(("needle: saving (dense): ", "needle: saving (BM25): "))
    )
    assert last_save < digests[0][0], lines  # once the stores are saved, as the generation is published


def test_each_store_s_save_reports_the_digests_of_its_own_files(hybrid: tuple[Path, list[str]]) -> None:
    out, lines = hybrid
    for part, store in [("dense", "dense"), ("BM25", "bm25")]:
        digests = counted_bytes(lines, f"saving ({part}): digesting")
        # documents.sqlite and the vectors; the BM25 matrices, in bytes, up to the files the store records
        assert digests[0][2] == recorded_bytes(store_generation(out / "gen-000001" / store)), part
        documents = [i for i, line in enumerate(lines) if STAGE.fullmatch(line) and f"({part})" in line]
        assert max(documents) < digests[0][0], lines  # inside the save, once its files are written
    bm25_read = min(i for i, line in enumerate(lines) if line.startswith("needle: indexing (BM25): "))
    assert counted_bytes(lines, "saving (dense): digesting")[-1][0] < bm25_read, lines  # the dense save, done


def test_a_rebuild_reports_the_check_of_the_embeddings_it_reuses(
    hybrid: tuple[Path, list[str]], corpus: Path, tiny_model: str, tmp_path: Path
) -> None:
    out = tmp_path / "ix"
    shutil.copytree(hybrid[0], out)
    assert not any(line.startswith("needle: reusing (embeddings): ") for line in hybrid[1])  # nothing to reuse
    lines = index_through_a_pipe(str(corpus), "--out", str(out), "--model", tiny_model)
    checks = counted_bytes(lines, "reusing (embeddings): checking files")
    files = json.loads((out / "gen-000001" / "manifest.json").read_text(encoding="utf-8"))["files"]
    assert checks[0][2] == files["embeddings.npy"] + files["embeddings.npy.json"]  # the old file and its fingerprint
    encoding = min(i for i, line in enumerate(lines) if line.startswith("needle: indexing (dense): "))
    assert checks[-1][0] < encoding, lines  # before the build, which then reuses them
    assert f"needle: reused {LINES:,} embeddings from {out / 'gen-000001' / 'embeddings.npy'}" in lines, lines


def test_a_bm25_only_index_reports_writing_its_documents(corpus: Path, tmp_path: Path) -> None:
    lines = index_through_a_pipe(str(corpus), "--out", str(tmp_path / "ix"), "--bm25", "--no-dense")
    assert stage_order(saves(lines)["BM25"]) == [*BM25_BUILD, "writing documents"]
    assert any(line.startswith("needle: saving (BM25): writing documents 300/300 docs (100%, ") for line in lines)
    assert all(line.startswith("needle: ") for line in lines), lines  # plain lines only: no bar through a pipe


def test_an_image_index_reports_its_encode_and_its_save(tmp_path: Path) -> None:
    model = build_clip(tmp_path / "hf", tmp_path / "clip")
    (tmp_path / "img").mkdir()
    rows = []
    for colour in PAIRS:
        toy_image(colour).save(tmp_path / "img" / f"{colour}.png")
        rows.append(json.dumps({"id": colour, "image_path": f"img/{colour}.png"}) + "\n")
    corpus = tmp_path / "images.jsonl"
    corpus.write_text("".join(rows), encoding="utf-8")
    args = [str(corpus), "--out", str(tmp_path / "ix"), "--multimodal", "--model", str(model)]
    lines = index_through_a_pipe(*args)
    n = len(PAIRS)
    assert f"needle: indexing (images): encoding {n}/{n} docs" in "\n".join(lines), lines
    assert [stage for stage, _, _ in saves(lines)["images"]][-1] == "writing vectors"
