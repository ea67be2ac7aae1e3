"""The FAISS, BM25 and learned sparse parts of an index generation, each built by its YAML index pipeline, chunk by
chunk.

``build_dense`` runs ``pipelines/dense_index.yaml`` (embeddings into DIR/gen-NNNNNN/embeddings.npy and the FAISS
store in dense/), ``build_bm25`` runs ``pipelines/bm25_index.yaml`` (bm25/); both stream the corpus through
``needle_retrieval.index.streaming`` and save their store once at the end (``build_sparse`` likewise runs
``pipelines/sparse_index.yaml`` into sparse/) (``save_store``), each stage of the save shown
as a progress step (``needle: saving (BM25): weighting terms 100,000/200,000 docs ...``), and last the hashing of the
files it wrote, in bytes (``needle: saving (dense): digesting 1,048,576/52,428,800 bytes ...``). An embedding file
carried over from the previous generation (``carry_embeddings``) is kept only when its fingerprint matches this
model and corpus.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Pipeline
from haystack.core.errors import PipelineRuntimeError

from components.embedders.embedding_file import EmbeddingFileError
from components.stores.file_digests import DIGESTING
from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE
from needle_retrieval.errors import EmbeddingsNotReusable
from needle_retrieval.index.dense_type import FLAT, DenseIndexType
from needle_retrieval.index.generations import EMBEDDINGS, link_or_copy
from needle_retrieval.index.options import DEFAULT_OPTIONS, IndexOptions
from needle_retrieval.index.streaming import run_chunked
from needle_retrieval.index.templates import set_index_type
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.embedders import Recorded, set_document_embedder
from needle_retrieval.progress import Stages


def carry_embeddings(generation: Path, reuse: Path | None, overwrite: bool) -> Path:
    """Link ``reuse`` (an earlier embedding file and its fingerprint) into GENERATION unless re-encoding;
    returns the generation's embedding path. The embedder keeps the file only when its fingerprint matches."""
    npy = generation / EMBEDDINGS
    if reuse is not None and not overwrite:
        link_or_copy(reuse, npy)
        sidecar = Path(f"{reuse}.json")
        if sidecar.is_file():
            link_or_copy(sidecar, Path(f"{npy}.json"))
    return npy


def build_dense(
    corpus: Path,
    generation: Path,
    model: str,
    overwrite: bool,
    reuse: Path | None,
    embedder: Recorded = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    index_type: DenseIndexType = FLAT,
    options: IndexOptions = DEFAULT_OPTIONS,
) -> tuple[int, int]:
    """
    Run pipelines/dense_index.yaml into GENERATION, once per CHUNK_SIZE documents
    (``needle_retrieval.index.streaming``), saving the FAISS store once at the end; returns (documents written,
    embedding dimension).

    ``embedder``: the backend as a manifest records it (``needle_retrieval.pipelines.embedders``); None:
    sentence-transformers MODEL.
    ``index_type``: the FAISS index (flat or HNSW, ``needle_retrieval.index.dense_type``).
    ``options``: the reader's duplicate-id rule and the FAISS store's settings (``needle_retrieval.index.options``).

    ``reuse`` is the previous generation's embedding file: linked in first, the embedder keeps it when its
    fingerprint matches this model and corpus, and refuses it otherwise (``--overwrite`` re-encodes).
    """
    npy = carry_embeddings(generation, reuse, overwrite)
    pipeline = pf.build(dense_template(generation, model, overwrite, embedder, index_type, options))
    writer: Any = pipeline.get_component("writer")
    writer.document_store.write_in_place()  # dense/ lies in the generation being built: its table is linked
    with embeddings_refused():
        written = run_chunked(pipeline, corpus, chunk_size, "Indexing (dense)")
    save_store(pipeline, "dense")
    return written, int(np.load(npy, mmap_mode="r").shape[1])


def dense_template(
    generation: Path,
    model: str,
    overwrite: bool,
    embedder: Recorded,
    index_type: DenseIndexType,
    options: IndexOptions,
) -> dict[str, Any]:
    """``pipelines/dense_index.yaml`` set up to build GENERATION's dense part (arguments as ``build_dense``'s)."""
    data = pf.load_template("dense_index")
    set_document_embedder(data, model, str(generation / EMBEDDINGS), overwrite, embedder)
    pf.set_init_param(data, "writer.document_store.path", str(generation / "dense"))
    set_index_type(data, "writer", index_type)
    pf.set_init_param(data, "writer.document_store.autosave", False)
    options.apply(data, writes_dense=True)
    return data


def save_store(pipeline: Pipeline, part: str) -> None:
    """Save the store of an index PIPELINE's writer (built with ``autosave`` off), its stages shown as progress
    steps named after the PART (``dense``, ``BM25``, ``images``): documents for the stages that write them, bytes
    for the ``digesting`` of the files they wrote."""
    desc = f"Saving ({part})"
    with Stages(desc=desc, unit="docs") as documents, Stages(desc=desc, unit="bytes") as digests:

        def report(stage: str, done: int, total: int) -> None:
            """Each stage to the step counting its unit (every stage ends at its total before the next starts)."""
            (digests if stage == DIGESTING else documents)(stage, done, total)

        pipeline.get_component("writer").document_store.save(on_progress=report)  # type: ignore[attr-defined]


@contextmanager
def embeddings_refused() -> Iterator[None]:
    """Turn an index pipeline's refusal of a carried-over embedding file into ``EmbeddingsNotReusable``."""
    try:
        yield
    except PipelineRuntimeError as e:
        if isinstance(e.__cause__, EmbeddingFileError):
            raise EmbeddingsNotReusable(
                f"the index's embeddings cannot be reused ({e.__cause__}); rerun with --overwrite"
            ) from e
        raise


def build_bm25(
    corpus: Path,
    generation: Path,
    lang: str,
    documents_from: Path | None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    options: IndexOptions = DEFAULT_OPTIONS,
) -> int:
    """
    Run pipelines/bm25_index.yaml into GENERATION/bm25, once per CHUNK_SIZE documents, saving the BM25 store
    (one bm25s index over every chunk's term ids) once at the end; returns the number of documents written.

    ``documents_from``: the dense part of the same generation, where it will be once live; the BM25 part then
    stores no documents of its own and reads them from there. ``options``: the reader's duplicate-id rule.
    """
    data = pf.load_template("bm25_index")
    pf.set_init_param(data, "writer.document_store.path", str(generation / "bm25"))
    pf.set_init_param(data, "writer.document_store.lang", lang)
    if documents_from is not None:
        pf.set_init_param(data, "writer.document_store.document_store_path", str(documents_from))
    pf.set_init_param(data, "writer.document_store.autosave", False)
    options.apply(data, writes_dense=False)
    pipeline = pf.build(data)
    written = run_chunked(pipeline, corpus, chunk_size, "Indexing (BM25)")
    save_store(pipeline, "BM25")
    return written


def build_sparse(
    corpus: Path,
    generation: Path,
    model: str,
    documents_from: Path | None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    options: IndexOptions = DEFAULT_OPTIONS,
) -> int:
    """
    Run pipelines/sparse_index.yaml into GENERATION/sparse with the SparseEncoder MODEL, once per CHUNK_SIZE
    documents, saving the sparse store once at the end; returns the number of documents written.

    ``documents_from``: the directory the same generation's dense part will have once the generation is live; the
    sparse part then reads its documents from there and stores none of its own (None: it stores its own).
    ``options``: the reader's duplicate-id rule and the embedder's batch size.
    """
    data = pf.load_template("sparse_index")
    pf.set_init_param(data, "embedder.model", model)
    pf.set_init_param(data, "writer.document_store.path", str(generation / "sparse"))
    if documents_from is not None:
        pf.set_init_param(data, "writer.document_store.document_store_path", str(documents_from))
    pf.set_init_param(data, "writer.document_store.autosave", False)
    options.apply_sparse(data)
    pipeline = pf.build(data)
    written = run_chunked(pipeline, corpus, chunk_size, "Indexing (sparse)")
    save_store(pipeline, "sparse")
    return written
