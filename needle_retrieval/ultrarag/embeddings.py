"""The corpus embedding file of a parameter file (`embedding_path`): written by `retriever_embed`, read by
`retriever_index`.

``embed_corpus`` encodes the corpus into `embedding_path` as the build's own document embedder does (the same
reader, the same options, so the file is the one ``needle index --config`` writes and reuses), chunk by chunk,
replacing the file crash-safely (``components.embedders.embedding_file_stream``); no index is built.

``checked_seed`` makes `embedding_path` fit to be indexed as it is, without the model: its rows are counted
against the corpus, its dtype (float32 or float16), shape and values checked, and its dimension compared with the
model's when the model's files tell it without loading (otherwise a wrong dimension shows at the first query):
the checks ``needle index --embeddings`` makes (``needle_retrieval.index.embeddings_in``). A file with needle's
fingerprint must match this model and corpus; a file UltraRAG wrote (a plain ``np.save``, no fingerprint) is
adopted in place after those checks, UltraRAG's workspace file being its to change: it gets the fingerprint this
build's embedder computes (``components.embedders.embedding_file_foreign.adopt_embeddings``, float16 rewritten as
float32), as UltraRAG indexes whatever its `.npy` holds.
"""

from pathlib import Path
from typing import Any

from haystack import Pipeline

from components.converters.jsonl_lines import count_objects
from components.embedders.embedding_file import REBUILD_HINT, EmbeddingFileError, sidecar_path
from components.embedders.embedding_file_foreign import adopt_embeddings, check_foreign
from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE, DEFAULT_MODEL
from needle_retrieval.errors import NeedleError
from needle_retrieval.index import embeddings_in
from needle_retrieval.index.checks import check_corpus
from needle_retrieval.index.streaming import aligned, chunk_inputs, doing, reporting, streams
from needle_retrieval.progress import Progress
from needle_retrieval.ultrarag.config import UltraRAGConfig

__all__ = ["checked_seed", "embed_corpus"]

REEMBED = "run retriever_embed with overwrite=true to encode the corpus again"


def corpus_pipeline(config: UltraRAGConfig, npy: Path, overwrite: bool = False) -> Pipeline:
    """The reader and document embedder of CONFIG's dense index build, keeping vectors in NPY (re-encoding with
    OVERWRITE), without its writer (``needle_retrieval.index.embeddings_in.document_pipeline``); nothing is loaded."""
    model = config.model or DEFAULT_MODEL
    return embeddings_in.document_pipeline(model, npy, config.spec.recorded(), config.options, overwrite)


def embed_corpus(config: UltraRAGConfig, npy: Path) -> int:
    """Encode CONFIG's corpus into NPY (replacing it crash-safely), chunk by chunk as ``needle index`` does; returns
    the number of documents.

    :raises NeedleError: a missing corpus, a model that does not load, a bad corpus line (naming file and line), a
        corpus changed meanwhile, or a failed write (the file there is then unchanged).
    """
    check_corpus(config.corpus)
    npy.parent.mkdir(parents=True, exist_ok=True)
    pipeline = corpus_pipeline(config, npy, overwrite=True)
    reader: Any = pipeline.get_component("reader")
    embedder: Any = pipeline.get_component("embedder")
    total = count_objects(config.corpus)
    try:
        embedder.warm_up()
    except (OSError, ValueError) as error:  # no such model, a model that does not load
        raise NeedleError(
            f"model_name_or_path {config.model}: cannot load it ({' '.join(str(error).split())})"
        ) from None
    bar = Progress(total=total, desc="Embedding", unit="docs", postfix=doing(embedder))
    with bar, reporting(embedder, bar):
        written = _run(reader, embedder, config.corpus, total, streams(pipeline), bar)
    if written != total:
        raise NeedleError(f"{config.corpus} changed while it was embedded: {total} documents counted, {written} read")
    return written


def _run(reader: Any, embedder: Any, corpus: Path, total: int, chunked: bool, bar: Progress) -> int:
    """Feed the corpus to the embedder (in chunks when it streams); the documents embedded."""
    try:
        if not chunked:
            documents = reader.run(path=str(corpus))["documents"]
            embedder.run(documents=documents)
            return len(documents)
        size, written = aligned(DEFAULT_CHUNK_SIZE, getattr(embedder, "encode_chunk_size", 1)), 0
        for start in range(0, max(total, 1), size):
            inputs = chunk_inputs(corpus, start, size, total, embedder=True)
            documents = reader.run(**inputs["reader"])["documents"]
            embedder.run(documents=documents, **inputs["embedder"])
            written += len(documents)
            bar.advance_to(written)
        return written
    except ValueError as error:  # a bad corpus line (CorpusFormatError), a corpus changed under the chunks
        raise NeedleError(str(error)) from None
    except OSError as error:  # a full disk, a read-only directory: the file there is unchanged
        raise NeedleError(f"writing the embeddings failed, so the file there is unchanged: {error}") from None


def checked_seed(config: UltraRAGConfig, npy: Path) -> None:
    """Make NPY fit for ``build_index(seed=NPY, encode=False)``: checked, and adopted when UltraRAG wrote it.

    :raises NeedleError: one line naming `embedding_path`, what is wrong, and `retriever_embed` with
        `overwrite=true` as the way out.
    """
    check_corpus(config.corpus)
    try:
        if config.multimodal:  # image inputs: their fingerprint is the image embedder's, computed as it embeds
            check_foreign(npy, count_objects(config.corpus))
            if not sidecar_path(npy).is_file():
                raise EmbeddingFileError(f"{npy} has no needle fingerprint, and image rows cannot be checked")
            return
        pipeline = corpus_pipeline(config, npy)
        expected = embeddings_in.corpus_fingerprint(config.corpus, pipeline)
        check_foreign(npy, expected["count"], embeddings_in.expected_dimension(pipeline, config.spec.recorded()))
        if not sidecar_path(npy).is_file():
            adopt_embeddings(npy, expected)
            return
        embeddings_in.check_fingerprint(npy, expected)
    except EmbeddingFileError as error:
        raise NeedleError(f"embedding_path {str(error).removesuffix(f'; {REBUILD_HINT}')}; {REEMBED}") from None
