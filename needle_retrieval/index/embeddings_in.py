"""Embeddings brought in: ``needle index CORPUS --embeddings FILE.npy`` indexes vectors computed elsewhere (a GPU
run, UltraRAG's ``retriever_embed``) -- row i is corpus line i -- without loading the model for documents; the
searches still encode their queries with ``--model``, which the manifest records as for any build.

``brought_embeddings`` checks FILE before anything is written, reading its ``.npy`` header only: readable, 2-D,
float32 or float16, one row per corpus document, and the model's dimension when the model's files tell it
without loading it (``model_dimension``; otherwise a wrong dimension shows at the first query). A fingerprint
beside FILE (needle wrote it: an index's or ``retriever_embed``'s file) must describe this model and corpus. It
then computes the fingerprint the build's own document embedder gives the corpus (``corpus_fingerprint``: its
settings and the digests of the ids and exact texts it would encode, read chunk by chunk without the model).

``bring_in`` writes FILE into the new generation as ``embeddings.npy`` (a copy, never a link: FILE stays the
user's to rewrite; float16 converted to float32 chunk by chunk, the first row holding NaN or infinity refused)
with that fingerprint, plus ``brought_from`` (FILE's name and dtype). The document embedder then reads it as it
reads an index's own embeddings, so the model is never loaded; a rebuild without ``--embeddings`` reuses it.
That is the Milvus build's way; the FAISS store's (``brought_build``) writes the same copy and fingerprint as it
reads the corpus and FILE once, indexing each chunk as it goes: ``brought_embeddings(deferred=True)`` then leaves
the corpus's fingerprint to it, unless a fingerprint beside FILE must be checked first. The sentence-transformers
embedder's settings and texts come from its recipe (``components.embedders.embedding_file_recipe``), so neither
the check nor the FAISS build imports sentence-transformers.

UltraRAG's ``retriever_index`` (``needle_retrieval.ultrarag.embeddings``) checks its ``embedding_path`` with the same
functions, and adopts it in place (UltraRAG's own workspace file) rather than copying it.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from haystack import Document, Pipeline

from components.converters.jsonl_lines import count_objects
from components.embedders.embedding_file import (
    REBUILD_HINT,
    EmbeddingFileError,
    StreamDigest,
    describe_differences,
    read_sidecar,
    sidecar_path,
    write_sidecar,
)
from components.embedders.embedding_file_foreign import ForeignMatrix, write_float32
from components.embedders.embedding_file_recipe import TextRecipe
from components.embedders.model_resolver import resolve_model
from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.generations import EMBEDDINGS
from needle_retrieval.index.options import IndexOptions
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.embedders import Recorded, backend_name, set_document_embedder

__all__ = [
    "BroughtEmbeddings",
    "bring_in",
    "brought_embeddings",
    "brought_from",
    "check_fingerprint",
    "check_options",
    "corpus_fingerprint",
    "document_pipeline",
    "document_template",
    "expected_dimension",
    "model_dimension",
    "text_source",
]

FLAG = "--embeddings"


class TextSource(Protocol):
    """What a fingerprint needs of a document embedder: its texts and its ``fingerprint`` (a component, or the
    sentence-transformers recipe, ``components.embedders.embedding_file_recipe``)."""

    def texts_to_embed(self, documents: list[Document]) -> list[str]: ...

    def fingerprint(self, documents: list[Document], texts: list[str]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class BroughtEmbeddings:
    """A checked FILE of ``--embeddings`` and the fingerprint the build's document embedder gives its corpus."""

    matrix: ForeignMatrix
    fingerprint: dict[str, Any] | None  # None: computed as the FAISS build reads the corpus (``brought_build``)


def check_options(dense: bool, multimodal: bool, overwrite: bool, seed: Path | None, options: IndexOptions) -> None:
    """Refuse what cannot go with ``--embeddings`` (``build_index``'s arguments).

    :raises NeedleError: naming the flag.
    """
    if not dense:
        raise NeedleError("--embeddings are the dense part's vectors: --no-dense indexes none")
    if multimodal:
        raise NeedleError("--embeddings cannot be combined with --multimodal: an image corpus is embedded as indexed")
    if overwrite:
        raise NeedleError("--overwrite re-encodes the corpus, but --embeddings brings its vectors: give one of them")
    if options.batch_size is not None:
        raise NeedleError("--batch-size sets the document embedder's batch: with --embeddings nothing is encoded")
    if seed is not None:
        raise NeedleError("--embeddings brings the vectors: no seed embedding file goes with it")


def brought_embeddings(
    path: Path, corpus: Path, model: str, embedder: Recorded, options: IndexOptions, deferred: bool = False
) -> BroughtEmbeddings:
    """Check PATH against CORPUS and MODEL (or EMBEDDER, the backend as the manifest records it) before a build
    indexes it as it is (``bring_in``); its finiteness is checked as it is copied.

    ``deferred``: the build reads the corpus once anyway (the FAISS store's, ``brought_build``), so the corpus's
    fingerprint is left to it (None here) unless a fingerprint beside PATH must be checked first.

    :raises NeedleError: one line, ``--embeddings PATH ...``, saying what is wrong: unreadable, not 2-D, another
        dtype, rows or dimension, or a needle fingerprint beside it that names another model or corpus.
    """
    pipeline, source = text_source(document_template(model, path, embedder, options))
    try:
        matrix = ForeignMatrix.open(path)
        matrix.check_rows(count_objects(corpus), _dimension(source, embedder))
    except EmbeddingFileError as error:
        raise NeedleError(f"{FLAG} {error}") from None
    if deferred and not sidecar_path(path).is_file():
        return BroughtEmbeddings(matrix, None)
    expected = _fingerprint(corpus, pipeline.get_component("reader"), source)
    if sidecar_path(path).is_file():
        try:
            check_fingerprint(path, expected)
        except EmbeddingFileError as error:
            reason = str(error).removesuffix(f"; {REBUILD_HINT}")
            raise NeedleError(
                f"{FLAG} {reason} (as {sidecar_path(path).name} says: delete that file to index the rows as they are)"
            ) from None
    return BroughtEmbeddings(matrix, expected)


def bring_in(brought: BroughtEmbeddings, generation: Path) -> None:
    """Write BROUGHT's rows into GENERATION as its float32 ``embeddings.npy`` with the corpus's fingerprint, which
    the build's document embedder then reads instead of encoding.

    :raises NeedleError: a row holds NaN or infinity (naming the first); nothing is left of the copy.
    """
    npy = generation / EMBEDDINGS
    if brought.fingerprint is None:
        raise ValueError("bring_in needs the corpus's fingerprint: check the file without deferring it")
    try:
        write_float32(brought.matrix, npy)
    except EmbeddingFileError as error:
        raise NeedleError(f"{FLAG} {error}") from None
    write_sidecar(npy, {**brought.fingerprint, "brought_from": brought_from(brought.matrix)}, brought.matrix.dim)


def brought_from(matrix: ForeignMatrix) -> dict[str, str]:
    """The sidecar's ``brought_from`` record of MATRIX: its file's name and dtype."""
    return {"file": matrix.path.name, "dtype": str(matrix.dtype.newbyteorder("="))}


def check_fingerprint(path: Path, expected: dict[str, Any]) -> None:
    """A needle fingerprint beside PATH must describe what is to be indexed (EXPECTED, ``corpus_fingerprint``).

    :raises EmbeddingFileError: it is unreadable, or it names another model, option or corpus (every difference).
    """
    differences = describe_differences(expected, read_sidecar(path))
    if differences:
        raise EmbeddingFileError(f"{path} was embedded for something else: {'; '.join(differences)}")


def document_pipeline(
    model: str, npy: Path, embedder: Recorded, options: IndexOptions, overwrite: bool = False
) -> Pipeline:
    """The reader and document embedder of a dense index build (``pipelines/dense_index.yaml`` as ``build_dense``
    sets it up, keeping vectors in NPY, re-encoding with OVERWRITE), without its writer; nothing is loaded."""
    data = document_template(model, npy, embedder, options, overwrite)
    del data["components"]["writer"]
    data["connections"] = [c for c in data["connections"] if not c["receiver"].startswith("writer.")]
    return pf.build(data)


def document_template(
    model: str, npy: Path, embedder: Recorded, options: IndexOptions, overwrite: bool = False
) -> dict[str, Any]:
    """``pipelines/dense_index.yaml`` with its reader and document embedder set as ``build_dense`` sets them."""
    data = pf.load_template("dense_index")
    set_document_embedder(data, model, str(npy), overwrite, embedder)
    options.apply(data, writes_dense=True)  # the reader's rule for repeated ids, the embedder's batch size
    return data


def text_source(data: dict[str, Any], keep: tuple[str, ...] = ("reader",)) -> tuple[Pipeline, TextSource]:
    """The components KEEP of the index template DATA as a pipeline (unconnected: the caller runs them) and what
    gives its embedder's texts and fingerprint: the sentence-transformers recipe when it has one (the component is
    then neither built nor imported), else the embedder component, then in the pipeline too."""
    recipe = TextRecipe.of(data["components"]["embedder"])
    kept = keep if recipe is not None else (*keep, "embedder")
    pipeline = pf.build({"components": {name: data["components"][name] for name in kept}, "connections": []})
    return pipeline, recipe if recipe is not None else pipeline.get_component("embedder")  # type: ignore[return-value]


def corpus_fingerprint(corpus: Path, pipeline: Pipeline) -> dict[str, Any]:
    """The fingerprint PIPELINE's document embedder (``document_pipeline``) gives the embedding file of CORPUS
    (settings, count, digests of the ids and of the exact texts it would encode), read chunk by chunk without
    loading the model.

    :raises NeedleError: a bad corpus line (naming file and line).
    """
    return _fingerprint(corpus, pipeline.get_component("reader"), pipeline.get_component("embedder"))  # type: ignore[arg-type]


def _fingerprint(corpus: Path, reader: Any, embedder: TextSource) -> dict[str, Any]:
    """``corpus_fingerprint`` of READER's documents as EMBEDDER (a text document embedder or its recipe) gives it."""
    ids, texts, count = StreamDigest(), StreamDigest(), 0
    try:
        for start in range(0, max(count_objects(corpus), 1), DEFAULT_CHUNK_SIZE):
            documents = reader.run(path=str(corpus), skip=start, limit=DEFAULT_CHUNK_SIZE)["documents"]
            ids.update([document.id for document in documents])
            texts.update(embedder.texts_to_embed(documents))
            count += len(documents)
    except ValueError as error:
        raise NeedleError(str(error)) from None
    settings = embedder.fingerprint([], [])  # the embedder's own record of its settings, for no documents
    return {**settings, "count": count, "ids_sha256": ids.hexdigest(), "texts_sha256": texts.hexdigest()}


def expected_dimension(pipeline: Pipeline, embedder: Recorded) -> int | None:
    """The dimension of the vectors PIPELINE's document embedder (``document_pipeline``; EMBEDDER: its backend as
    recorded) gives, when its settings and its model's files tell it without loading the model: the model's
    (``model_dimension``), cut to ``truncate_dim`` if set."""
    return _dimension(pipeline.get_component("embedder"), embedder)  # type: ignore[arg-type]


def _dimension(source: TextSource, embedder: Recorded) -> int | None:
    """``expected_dimension`` of the embedder SOURCE (the component or its recipe) stands for."""
    settings = source.fingerprint([], [])
    model, truncated = settings.get("model"), settings.get("truncate_dim")
    dim = model_dimension(model, embedder) if isinstance(model, str) else None
    if isinstance(truncated, int) and not isinstance(truncated, bool):
        return truncated if dim is None else min(truncated, dim)
    return dim


def model_dimension(model: str | None, embedder: Recorded) -> int | None:
    """The dimension of sentence-transformers MODEL (EMBEDDER: the backend as recorded; None: sentence-transformers),
    read from its files (a local directory, or the Hugging Face cache) without loading it: the last Pooling or
    Dense module's; None when the files do not tell (another backend, a model not on this machine, an unknown
    layout)."""
    if backend_name(embedder) != "sentence_transformers" or model is None:
        return None
    modules = _model_file(model, "modules.json")
    dim = None
    for module in modules if isinstance(modules, list) else []:
        if not isinstance(module, dict):
            return None
        kind, where = str(module.get("type", "")), str(module.get("path", ""))
        if kind.endswith((".Pooling", ".Dense")):
            settings = _model_file(model, f"{where}/config.json")
            if isinstance(settings, dict):
                found = settings.get("out_features", settings.get("word_embedding_dimension"))
                dim = found if found is not None else settings.get("embedding_dimension")
    return dim if isinstance(dim, int) and not isinstance(dim, bool) else None


def _model_file(model: str, name: str) -> Any:
    """The JSON of a file of MODEL (a directory, or a hub id already in the cache, or all-MiniLM-L6-v2's id offline:
    the copy the build would load, ``resolve_model``); None when absent or unreadable."""
    path = Path(resolve_model(model)) / name
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
