"""The corpus embedding file of a parameter file (`embedding_path`): written by `retriever_embed`, read by
`retriever_index`.

``embed_corpus`` encodes the corpus into `embedding_path` as the build's own document embedder does (the same
reader, the same options, so the file is the one ``needle index --config`` writes and reuses), chunk by chunk,
replacing the file crash-safely (``components.embedders.embedding_file_stream``); no index is built.

``checked_seed`` makes `embedding_path` fit to be indexed as it is, without the model: its rows are counted
against the corpus, its dtype (float32 or float16), shape and values checked, and its dimension compared with the
model's when the model's files tell it without loading (``model_dimension``; otherwise a wrong dimension shows at
the first query). A file with needle's fingerprint must match this model and corpus; a file UltraRAG wrote (a
plain ``np.save``, no fingerprint) is adopted after those checks: it gets the fingerprint this build's embedder
computes (``components.embedders.embedding_file.adopt_embeddings``), as UltraRAG indexes whatever its `.npy` holds.
"""

import json
from pathlib import Path
from typing import Any

from haystack import Pipeline

from components.converters.jsonl_lines import count_objects
from components.embedders.embedding_file import (
    REBUILD_HINT,
    EmbeddingFileError,
    StreamDigest,
    adopt_embeddings,
    check_foreign,
    describe_differences,
    read_sidecar,
    sidecar_path,
)
from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE, DEFAULT_MODEL
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import check_corpus
from needle_retrieval.index.streaming import aligned, chunk_inputs, doing, reporting, streams
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.embedders import set_document_embedder
from needle_retrieval.progress import Progress
from needle_retrieval.ultrarag.config import UltraRAGConfig

__all__ = ["checked_seed", "embed_corpus", "model_dimension"]

REEMBED = "run retriever_embed with overwrite=true to encode the corpus again"


def corpus_pipeline(config: UltraRAGConfig, npy: Path, overwrite: bool) -> Pipeline:
    """The reader and document embedder of CONFIG's dense index build (``pipelines/dense_index.yaml``), keeping
    vectors in NPY, without its writer; nothing is loaded."""
    data = pf.load_template("dense_index")
    set_document_embedder(data, config.model or DEFAULT_MODEL, str(npy), overwrite, config.spec.recorded())
    config.options.apply(data, writes_dense=True)  # the reader's rule for repeated ids, the embedder's batch size
    del data["components"]["writer"]
    data["connections"] = [c for c in data["connections"] if not c["receiver"].startswith("writer.")]
    return pf.build(data)


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


def corpus_fingerprint(config: UltraRAGConfig, npy: Path) -> dict[str, Any]:
    """The fingerprint CONFIG's document embedder gives the embedding file of its corpus (settings, count, digests
    of the ids and of the exact texts it would encode), computed chunk by chunk without loading the model."""
    pipeline = corpus_pipeline(config, npy, overwrite=False)
    reader: Any = pipeline.get_component("reader")
    embedder: Any = pipeline.get_component("embedder")  # a text document embedder: its texts and fingerprint
    ids, texts, count = StreamDigest(), StreamDigest(), 0
    try:
        for start in range(0, max(count_objects(config.corpus), 1), DEFAULT_CHUNK_SIZE):
            documents = reader.run(path=str(config.corpus), skip=start, limit=DEFAULT_CHUNK_SIZE)["documents"]
            ids.update([document.id for document in documents])
            texts.update(embedder.texts_to_embed(documents))
            count += len(documents)
    except ValueError as error:
        raise NeedleError(str(error)) from None
    settings = embedder.fingerprint([], [])  # the embedder's own record of its settings, for no documents
    return {**settings, "count": count, "ids_sha256": ids.hexdigest(), "texts_sha256": texts.hexdigest()}


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
        expected = corpus_fingerprint(config, npy)
        check_foreign(npy, expected["count"], model_dimension(config))
        if not sidecar_path(npy).is_file():
            adopt_embeddings(npy, expected)
            return
        differences = describe_differences(expected, read_sidecar(npy))
        if differences:
            raise EmbeddingFileError(f"{npy} was embedded for something else: {'; '.join(differences)}")
    except EmbeddingFileError as error:
        raise NeedleError(f"embedding_path {str(error).removesuffix(f'; {REBUILD_HINT}')}; {REEMBED}") from None


def model_dimension(config: UltraRAGConfig) -> int | None:
    """The dimension of CONFIG's sentence-transformers model, read from its files (a local directory, or the
    Hugging Face cache) without loading it: the last Pooling or Dense module's; None when the files do not tell
    (another backend, a model not on this machine, an unknown layout)."""
    if config.spec.backend != "sentence_transformers" or config.model is None:
        return None
    modules = _model_file(config.model, "modules.json")
    dim = None
    for module in modules if isinstance(modules, list) else []:
        if not isinstance(module, dict):
            return None
        kind, where = str(module.get("type", "")), str(module.get("path", ""))
        if kind.endswith((".Pooling", ".Dense")):
            settings = _model_file(config.model, f"{where}/config.json")
            if isinstance(settings, dict):
                found = settings.get("out_features", settings.get("word_embedding_dimension"))
                dim = found if found is not None else settings.get("embedding_dimension")
    return dim if isinstance(dim, int) and not isinstance(dim, bool) else None


def _model_file(model: str, name: str) -> Any:
    """The JSON of a file of MODEL (a directory, or a hub id already in the cache); None when absent or unreadable."""
    path = Path(model) / name
    if not path.is_file():
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(model, name)
        except Exception:
            return None
        if not isinstance(cached, str):
            return None
        path = Path(cached)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
