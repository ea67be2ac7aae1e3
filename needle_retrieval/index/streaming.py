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
ids, and a bad line in any chunk fails the build with the reader's ``file, line N`` error. One progress step
(``needle_retrieval.progress``) counts the corpus's documents (its non-blank lines, counted first without parsing) per
encode batch.
"""

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from haystack import Pipeline

from components.converters.jsonl_lines import count_objects
from components.embedders.embedding_file import reusable
from needle_retrieval.errors import NeedleError
from needle_retrieval.pipelines.direct_run import DirectRun
from needle_retrieval.progress import Progress


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
    CHUNK_SIZE documents under one ``needle_retrieval.progress`` step named DESC (a bar on a terminal, plain lines in
    logs), which counts the corpus's documents as the embedder reports each encode batch done (else chunk by chunk)
    and says whether it encodes or reads reused embeddings. Its clock starts once the pipeline is warmed up (the
    model loaded), so its rate is that of the documents. Returns the number of documents written; the caller
    saves the writer's store (built with ``autosave`` off) once this returns.

    :raises NeedleError: the corpus changed while it was read (another number of documents than counted).
    """
    total = count_objects(corpus)
    embedder = pipeline.get_component("embedder") if "embedder" in dict(pipeline.graph.nodes) else None
    chunked = streams(pipeline)
    chunks: list[dict[str, dict[str, Any]]] = [{"reader": {"path": str(corpus)}}]  # not chunked: one run
    if chunked:
        if embedder is not None:
            chunk_size = aligned(chunk_size, getattr(embedder, "encode_chunk_size", 1))
        starts = range(0, max(total, 1), chunk_size)
        chunks = [chunk_inputs(corpus, start, chunk_size, total, embedder is not None) for start in starts]
    run_chunk = index_runner(pipeline, chunks[0])  # the model loads here, before the step's clock starts
    written = 0
    with Progress(total=total, desc=desc, unit="docs", postfix=doing(embedder)) as bar, reporting(embedder, bar):
        for inputs in chunks:
            written += run_chunk(inputs)
            bar.advance_to(written)
    if chunked and written != total:
        raise NeedleError(f"{corpus} changed while it was indexed: {total} documents counted, {written} written")
    return written


def doing(embedder: object | None) -> str | None:
    """What the EMBEDDER (if any) does with the corpus: ``encoding``, or ``reading embeddings`` when its embedding
    file is there to be reused (it reads the file's rows, or refuses the file)."""
    if embedder is None:
        return None
    path, overwrite = getattr(embedder, "embedding_path", None), getattr(embedder, "overwrite", False)
    return "reading embeddings" if reusable(path, overwrite) else "encoding"


@contextmanager
def reporting(embedder: object | None, bar: Progress) -> Iterator[None]:
    """While the block runs, the EMBEDDER counts each encode batch on BAR instead of showing its own bar."""
    if embedder is None:
        yield
        return
    embedder.progress_bar = False  # type: ignore[attr-defined]  # one bar: ours
    if not hasattr(embedder, "progress_callback"):  # an embedder that cannot report batches: counted per chunk
        yield
        return
    embedder.progress_callback = bar.update
    try:
        yield
    finally:
        embedder.progress_callback = None


def index_runner(pipeline: Pipeline, shape: dict[str, dict[str, Any]]) -> Callable[[dict[str, dict[str, Any]]], int]:
    """
    A function running the index PIPELINE once on inputs fed at the sockets of SHAPE, returning the documents
    written. Stage by stage when ``DirectRun`` can (the components never change the chunk they pass on, so
    Haystack's deep copy of it is not needed), planned once for every chunk; its errors come wrapped as
    ``Pipeline.run``'s, which the callers' error handling reads. The pipeline is warmed up (models loaded) here.
    """
    direct = DirectRun.plan(pipeline, {(name, socket) for name, sockets in shape.items() for socket in sockets})
    pipeline.warm_up()
    if direct is None:
        return lambda inputs: int(pipeline.run(inputs)["writer"]["documents_written"])
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
