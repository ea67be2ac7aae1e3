"""An index directory as the CLI builds it: a manifest plus one sub-directory per retrieval mode.

Layout of ``needle index CORPUS --out DIR``::

    DIR/needle.json          manifest: model, dimension, corpus, document count, modes
    DIR/embeddings.npy       corpus embeddings, row i = corpus line i (the seed's embedding file)
    DIR/dense/               FAISS document store (vectors + documents)
    DIR/bm25/                BM25 index (when built with --bm25)
    DIR/<mode>_search.yaml   the search pipelines with this directory's paths filled in (Hayhooks-ready)
"""

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from haystack import Document

from needle import pipeline_files as pf

MANIFEST = "needle.json"
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class NeedleError(Exception):
    """A user-facing error: the CLI prints its message on one line, without a traceback."""


@dataclass
class IndexManifest:
    """What an index directory holds and how it was built; searches check queries against it."""

    corpus: str
    documents: int
    modes: list[str]
    model: str | None = None
    dim: int | None = None
    bm25_lang: str | None = None
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def save(self, index_dir: Path) -> None:
        """Write the manifest atomically, so a crash never leaves a half-written one."""
        tmp = index_dir / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")
        os.replace(tmp, index_dir / MANIFEST)

    @classmethod
    def load(cls, index_dir: Path) -> "IndexManifest":
        """Read DIR/needle.json, or explain what is missing or broken."""
        path = index_dir / MANIFEST
        if not index_dir.is_dir():
            raise NeedleError(f"index directory not found: {index_dir} (build one with `needle index CORPUS --out DIR`)")
        if not path.is_file():
            raise NeedleError(f"{index_dir} is not a needle index: {path} is missing (build one with `needle index`)")
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as e:
            raise NeedleError(f"corrupted index manifest {path}: {e}") from e


def build_dense(corpus: Path, index_dir: Path, model: str, overwrite: bool) -> tuple[int, int]:
    """Run pipelines/dense_index.yaml into INDEX_DIR; returns (documents written, embedding dimension)."""
    data = pf.load_template("dense_index")
    pf.set_init_param(data, "embedder.model", model)
    pf.set_init_param(data, "embedder.embedding_path", str(index_dir / "embeddings.npy"))
    pf.set_init_param(data, "embedder.overwrite", overwrite)
    pf.set_init_param(data, "writer.document_store.path", str(index_dir / "dense"))
    shutil.rmtree(index_dir / "dense", ignore_errors=True)
    written = pf.build(data).run({"reader": {"path": str(corpus)}})["writer"]["documents_written"]
    return written, int(np.load(index_dir / "embeddings.npy", mmap_mode="r").shape[1])


def build_bm25(corpus: Path, index_dir: Path, lang: str, share_documents: bool) -> int:
    """Run pipelines/bm25_index.yaml into INDEX_DIR/bm25 (documents read from the dense part when there is one).

    Returns the number of documents written.
    """
    data = pf.load_template("bm25_index")
    pf.set_init_param(data, "writer.document_store.path", str(index_dir / "bm25"))
    pf.set_init_param(data, "writer.document_store.lang", lang)
    if share_documents:
        pf.set_init_param(data, "writer.document_store.document_store_path", str(index_dir.resolve() / "dense"))
    shutil.rmtree(index_dir / "bm25", ignore_errors=True)
    return pf.build(data).run({"reader": {"path": str(corpus)}})["writer"]["documents_written"]


def fill_search_pipeline(index_dir: Path, manifest: IndexManifest, name: str, top_k: int = 5) -> dict:
    """Fill pipelines/<name>_search.yaml with this index's paths, model and top_k."""
    data = pf.load_template(f"{name}_search")
    names = list(data["components"])
    if "embedder" in names:
        pf.set_init_param(data, "embedder.model", manifest.model)
    for name in names:
        store = data["components"][name]["init_parameters"].get("document_store")
        if store is not None:
            sub = "dense" if "FAISS" in store["type"] else "bm25"
            pf.set_init_param(data, f"{name}.document_store.path", str(index_dir.resolve() / sub))
            if sub == "bm25" and "dense" in manifest.modes:
                shared = str(index_dir.resolve() / "dense")
                pf.set_init_param(data, f"{name}.document_store.document_store_path", shared)
        params = data["components"][name]["init_parameters"]
        if "top_k" in params:
            # The component that answers gets top_k; candidate generators before it keep at least as many.
            final = name == data["outputs"]["documents"].split(".", 1)[0]
            pf.set_init_param(data, f"{name}.top_k", top_k if final else max(top_k, params["top_k"]))
    return data


def save_search_pipelines(index_dir: Path, manifest: IndexManifest, modes: list[str]) -> None:
    """Write DIR/<mode>_search.yaml for each mode, ready for `hayhooks run --pipelines-dir DIR`."""
    for mode in modes:
        pf.dump(fill_search_pipeline(index_dir, manifest, mode), index_dir / f"{mode}_search.yaml")


def as_hits(documents: list[Document]) -> list[dict]:
    """The CLI's --json shape for one query: ``{"id", "score", "content"}`` per hit, best first."""
    return [{"id": d.id, "score": d.score, "content": d.content} for d in documents]
