"""Streamed index builds: an indexing pipeline run once per chunk of the corpus, so memory does not grow with it.

``needle index`` runs each index pipeline (pipelines/dense_index.yaml, bm25_index.yaml, milvus_index.yaml) once
per ``chunk_size`` documents (with an embedder: rounded up to a multiple of its ``encode_chunk_size``) instead
of once over the whole corpus: the reader reads documents ``skip`` to ``skip + limit`` (reading on from where
the previous chunk stopped), the document embedder fills the embedding file chunk by chunk (its
``offset``/``total`` inputs), and the writer adds each chunk to the store, which is saved once at the end
(``autosave`` off: a save per chunk would rewrite the whole store each time). Until then the stores keep the
written documents in temporary files, not in memory; what grows with the corpus is the index itself (FAISS
vectors, BM25 term ids), measured by benchmarks/bench_index_memory.py.

The result is the one-shot build's, byte for byte for the embedding file: same rows, same document order, same
ids, and a bad line in any chunk fails the build with the reader's ``file, line N`` error. One progress bar (on
a terminal) counts the corpus's documents (its non-blank lines, counted first without parsing).
"""

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack import Pipeline
from tqdm.auto import tqdm

from components.converters.jsonl_lines import count_objects
from needle.direct_run import DirectRun
from needle.index_generations import NeedleError

DEFAULT_CHUNK_SIZE = 10_000


def check_chunk_size(value: object) -> int:
    """The chunk size when it is an integer >= 1. :raises NeedleError: naming --chunk-size and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NeedleError(f"--chunk-size must be an integer >= 1 (documents per chunk), got {value!r}")
    return value


def streams(pipeline: Pipeline) -> bool:
    """Whether PIPELINE's embedder (if any) takes a corpus chunk by chunk (``offset``/``total`` run inputs).

    Embedders without them (the OpenAI-compatible and image ones) get the whole corpus in one run.
    """
    names = dict(pipeline.graph.nodes)
    if "embedder" not in names:
        return True
    parameters = inspect.signature(pipeline.get_component("embedder").run).parameters
    return "offset" in parameters and "total" in parameters


def run_chunked(pipeline: Pipeline, corpus: Path, chunk_size: int, desc: str) -> int:
    """
    Run an index PIPELINE (input ``reader.path``, output ``writer.documents_written``) over CORPUS in chunks of
    CHUNK_SIZE documents, under one progress bar on a terminal (shown from the first chunk written on, so that an
    error in the first chunk prints alone, and wiped on a later error; never in logs, whose error line must stand
    alone); returns the number of documents written. The caller saves the writer's store (built with
    ``autosave`` off) once this returns.

    :raises NeedleError: the corpus changed while it was read (another number of documents than counted).
    """
    total = count_objects(corpus)
    if not streams(pipeline):
        whole = {"reader": {"path": str(corpus)}}
        return index_runner(pipeline, whole)(whole)
    embedder = pipeline.get_component("embedder") if "embedder" in dict(pipeline.graph.nodes) else None
    if embedder is not None:
        embedder.progress_bar = False  # type: ignore[attr-defined]  # one bar: ours
        chunk_size = aligned(chunk_size, getattr(embedder, "encode_chunk_size", 1))
    written, bar = 0, None
    run_chunk = index_runner(pipeline, chunk_inputs(corpus, 0, chunk_size, total, embedder is not None))
    try:
        for start in range(0, max(total, 1), chunk_size):
            written += run_chunk(chunk_inputs(corpus, start, chunk_size, total, embedder is not None))
            if bar is None:
                bar = tqdm(total=total, unit="docs", desc=desc, disable=None)  # None: on a terminal only
            bar.update(min(chunk_size, total - start))
    except BaseException:
        if bar is not None:
            bar.leave = False  # wiped, so that the error stands on a line of its own
        raise
    finally:
        if bar is not None:
            bar.close()
    if written != total:
        raise NeedleError(f"{corpus} changed while it was indexed: {total} documents counted, {written} written")
    return written


def index_runner(pipeline: Pipeline, shape: dict[str, dict[str, Any]]) -> Callable[[dict[str, dict[str, Any]]], int]:
    """
    A function running the index PIPELINE once on inputs fed at the sockets of SHAPE, returning the documents
    written. Stage by stage when ``DirectRun`` can (the components never change the chunk they pass on, so
    Haystack's deep copy of it is not needed), planned and warmed up once for every chunk; its errors come wrapped
    as ``Pipeline.run``'s, which the callers' error handling reads.
    """
    direct = DirectRun.plan(pipeline, {(name, socket) for name, sockets in shape.items() for socket in sockets})
    if direct is None:
        return lambda inputs: int(pipeline.run(inputs)["writer"]["documents_written"])
    pipeline.warm_up()
    return lambda inputs: int(direct.run(inputs, wrap_errors=True)["writer"]["documents_written"])


def aligned(chunk_size: int, unit: int) -> int:
    """CHUNK_SIZE rounded up to a multiple of UNIT, the embedder's ``encode_chunk_size``.

    sentence-transformers sorts each ``encode`` call's texts by length before batching them, and a batch padded
    to another length gives other last bits; chunks that start on the one-shot run's ``encode`` boundaries
    make the same calls, so the embedding file is identical byte for byte.
    """
    return -(-chunk_size // unit) * unit


def chunk_inputs(corpus: Path, start: int, size: int, total: int, embedder: bool) -> dict[str, dict[str, Any]]:
    """The run inputs of the chunk of SIZE documents from document START (the embedder's ``offset``/``total``)."""
    inputs: dict[str, dict[str, Any]] = {"reader": {"path": str(corpus), "skip": start, "limit": size}}
    if embedder:
        inputs["embedder"] = {"offset": start, "total": total}
    return inputs
