"""Building what UltraRAG's parameter file describes: `needle index --config`, and the MCP build tools.

* ``index_with_config`` (`needle index --config`): the whole index the file's backend names; the corpus vectors
  are reused from `embedding_path` when it holds this model's vectors of this corpus, and written there after.
* ``embed_with_config`` (`retriever_embed`): the corpus vectors into `embedding_path` only; a file there is kept
  unless `overwrite` is true, as UltraRAG keeps it (``needle_retrieval.ultrarag.embeddings``).
* ``index_from_embeddings`` (`retriever_index`): the dense index from the vectors in `embedding_path` as they are,
  never loading the model: UltraRAG's own `.npy` is checked and adopted (``needle_retrieval.ultrarag.embeddings``).
* ``bm25_with_config`` (`bm25_index`): the BM25 index at `backend_configs.bm25.save_path`.

The tools build at the path the file names even where UltraRAG built its own index (a FAISS file, bm25s'
directory, a Milvus Lite database): refused without `overwrite=true`, replaced with it, never removed before the
needle index is whole (``needle_retrieval.ultrarag.foreign``). Each returns a one-line summary, and its errors
(``NeedleError``) name the tools' arguments, never the CLI's flags. `overwrite` does not re-encode in
`retriever_index` and `bm25_index`: a needle index at the path is rebuilt as a new generation either way, and
searches answer from the old one until it is live.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.embedders.embedding_file import REBUILD_HINT, copy_embeddings
from needle_retrieval.defaults import DEFAULT_MODEL
from needle_retrieval.errors import EmbeddingsNotReusable, NeedleError
from needle_retrieval.index.build import build_index
from needle_retrieval.index.dense_type import FLAT
from needle_retrieval.index.generations import EMBEDDINGS
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.ultrarag.config import UltraRAGConfig, load_config
from needle_retrieval.ultrarag.embeddings import REEMBED, checked_seed, embed_corpus
from needle_retrieval.ultrarag.foreign import build_at

__all__ = ["bm25_with_config", "embed_with_config", "export_embeddings", "index_from_embeddings", "index_with_config"]

Overrides = Mapping[str, Any] | None


def index_with_config(
    path: Path | None, out: Path | None = None, overrides: Overrides = None
) -> tuple[IndexManifest, Path]:
    """`needle index --config PATH [--out DIR]`: build the index the file describes (with OVERRIDES, as for
    `load_config`); returns its manifest and directory (DIR if given, else the backend's own index directory).

    The corpus vectors are reused from `embedding_path` when it holds this model's vectors of this corpus, and
    written there after the build.
    """
    config = load_config(path, overrides)
    npy, out = config.embedding_path, out or config.index_dir
    manifest = _build(config, out, seed=npy if npy is not None and npy.is_file() else None, overwrite=config.overwrite)
    if npy is not None:
        export_embeddings(out, manifest, npy)
    return manifest, out


def embed_with_config(path: Path | None, overrides: Overrides = None) -> str:
    """`retriever_embed`: encode the corpus into `embedding_path` (float32 rows, row i = corpus line i), replacing
    it crash-safely; with `overwrite` false a file already there is kept. Returns a one-line summary.

    :raises NeedleError: no `embedding_path`, a missing corpus or bad line, a model that does not load.
    """
    config = load_config(path, overrides)
    if not config.spec.dense:
        return "backend bm25 has no embeddings: nothing to embed (bm25_index builds its index)"
    npy = _embedding_path(config, "retriever_embed")
    if npy.exists() and not config.overwrite:
        return f"kept the embeddings already at {npy} (overwrite=true encodes the corpus again)"
    if config.multimodal:  # the image embedder does not stream: it embeds while building the image index
        manifest, _ = index_with_config(path, None, {**(overrides or {}), "overwrite": True})
        return f"embedded {manifest.documents} images into {npy}"
    return f"embedded {embed_corpus(config, npy)} documents into {npy}"


def index_from_embeddings(path: Path | None, overrides: Overrides = None) -> str:
    """`retriever_index`: build the dense index from the vectors in `embedding_path`, without the model (UltraRAG's
    own `.npy` is adopted after its checks). Returns a one-line summary.

    :raises NeedleError: backend bm25, no `embedding_path` file (naming `retriever_embed`), vectors that do not fit
        the corpus or the model, or UltraRAG's index at the place without `overwrite=true`.
    """
    config = load_config(path, overrides)
    if not config.spec.dense:
        raise NeedleError("retriever_index builds a dense index, but backend is bm25: build it with bm25_index")
    npy = _embedding_path(config, "retriever_index")
    if config.demo and not npy.is_file():  # UltraRAG's demo mode encodes in retriever_index (retriever_embed skips)
        return _summary(_build(config, config.index_dir, seed=None, overwrite=config.overwrite), config.index_dir)
    if not npy.is_file():
        raise NeedleError(f"embedding_path {npy} does not exist: run retriever_embed first (it encodes the corpus)")
    checked_seed(config, npy)
    try:
        manifest = build_at(
            config.index_dir,
            _place_key(config),
            config.overwrite,
            lambda out: _build(config, out, seed=npy, encode=False, overwrite=False),
        )
    except EmbeddingsNotReusable as error:  # its fingerprint does not fit the matrix, or it changed since checked
        refusal = error.__cause__.__cause__ if error.__cause__ is not None else None  # the embedder's reason
        reason = str(refusal or error).removesuffix(f"; {REBUILD_HINT}")
        reason = reason.split(f"{EMBEDDINGS} ", 1)[-1]  # it names the copy in the new generation: NPY is meant
        raise NeedleError(f"embedding_path {npy} {reason}; {REEMBED}") from None
    return _summary(manifest, config.index_dir)


def bm25_with_config(path: Path | None, overrides: Overrides = None) -> str:
    """`bm25_index`: build the BM25 index of the corpus at `backend_configs.bm25.save_path`. Returns a one-line
    summary.

    :raises NeedleError: a missing corpus or bad line, or UltraRAG's index at save_path without `overwrite=true`.
    """
    config = load_config(path, {**(overrides or {}), "backend": "bm25"})
    manifest = build_at(
        config.index_dir,
        "backend_configs.bm25.save_path",
        config.overwrite,
        lambda out: _build(config, out, seed=None, overwrite=config.overwrite),
    )
    return _summary(manifest, config.index_dir)


def export_embeddings(index_dir: Path, manifest: IndexManifest, npy: Path) -> None:
    """Copy the generation's embedding file (and its fingerprint) to NPY, each replaced crash-safely
    (``components.embedders.embedding_file.copy_embeddings``)."""
    source = index_dir / manifest.generation / EMBEDDINGS
    if source.is_file():
        copy_embeddings(source, npy)


def _build(
    config: UltraRAGConfig, out: Path, *, seed: Path | None, overwrite: bool, encode: bool = True
) -> IndexManifest:
    """``build_index`` of what CONFIG describes into OUT (dense for a dense backend, else BM25)."""
    dense = config.spec.dense
    return build_index(
        config.corpus,
        out,
        model=config.model or DEFAULT_MODEL,
        overwrite=overwrite,
        dense=dense,
        bm25=not dense,
        lang="en" if dense else config.spec.bm25_lang(),
        target=config.target,
        seed=seed,
        encode=encode,
        embedder=config.spec.recorded() if dense else None,  # images too (needle_retrieval.index.images)
        multimodal=config.multimodal,
        index_type=config.index_type if dense else FLAT,
        options=config.options,
    )


def _embedding_path(config: UltraRAGConfig, tool: str) -> Path:
    """The file's `embedding_path`. :raises NeedleError: there is none."""
    if config.embedding_path is None:
        raise NeedleError(f"{tool} needs embedding_path (a .npy file), in the parameter file or as its argument")
    return config.embedding_path


def _place_key(config: UltraRAGConfig) -> str:
    """The parameter file's key that places the dense index."""
    if config.target.store == "faiss":
        return "index_backend_configs.faiss.index_path"
    if config.target.uri is not None:  # a Milvus server: the index directory is placed beside embedding_path
        return "embedding_path"
    return "index_backend_configs.milvus.uri"


def _summary(manifest: IndexManifest, where: Path) -> str:
    """The tools' one line: documents, modes, directory."""
    return f"indexed {manifest.documents} documents ({', '.join(manifest.modes)}) into {where}"
