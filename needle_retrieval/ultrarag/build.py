"""Building the index UltraRAG's parameter file describes: `needle index --config` and the MCP build tools.

The corpus vectors are reused from `embedding_path` when it holds this model's vectors of this corpus, and written
there after the build (``needle_retrieval.ultrarag.config`` reads and checks the file).
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.embedders.embedding_file import copy_embeddings
from needle_retrieval.defaults import DEFAULT_MODEL
from needle_retrieval.index.build import build_index
from needle_retrieval.index.generations import EMBEDDINGS
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.ultrarag.config import load_config

__all__ = ["export_embeddings", "index_with_config"]


def index_with_config(
    path: Path, out: Path | None = None, overrides: Mapping[str, Any] | None = None
) -> tuple[IndexManifest, Path]:
    """`needle index --config PATH [--out DIR]`: build the index the file describes (with OVERRIDES, as for
    `load_config`); returns its manifest and directory (DIR if given, else the backend's own index directory).

    The corpus vectors are reused from `embedding_path` when it holds this model's vectors of this corpus, and
    written there after the build.
    """
    config = load_config(path, overrides)
    dense, npy, out = config.spec.dense, config.embedding_path, out or config.index_dir
    manifest = build_index(
        config.corpus,
        out,
        model=config.model or DEFAULT_MODEL,
        overwrite=config.overwrite,
        dense=dense,
        bm25=not dense,
        lang="en" if dense else config.spec.bm25_lang(),
        target=config.target,
        seed=npy if npy is not None and npy.is_file() else None,
        embedder=config.spec.recorded() if dense else None,  # images too (needle_retrieval.index.images)
        multimodal=config.multimodal,
        options=config.options,
    )
    if npy is not None:
        export_embeddings(out, manifest, npy)
    return manifest, out


def export_embeddings(index_dir: Path, manifest: IndexManifest, npy: Path) -> None:
    """Copy the generation's embedding file (and its fingerprint) to NPY, each replaced crash-safely
    (``components.embedders.embedding_file.copy_embeddings``)."""
    source = index_dir / manifest.generation / EMBEDDINGS
    if source.is_file():
        copy_embeddings(source, npy)
