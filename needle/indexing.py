"""`needle index`: build a whole new generation of an index directory beside the live one, then switch to it.

The build holds the directory's writer lock from start to end, writes every part (embeddings, dense, BM25,
manifest, search pipelines) into ``gen-NNNNNN.partial`` and makes it live with one atomic rename of the
pointer. Until then searches answer from the previous generation, and any failure (bad corpus line, full
disk, ``kill -9``) leaves that generation live and unchanged.
"""

import shutil
from pathlib import Path
from typing import Any

from haystack.core.errors import PipelineRuntimeError

from needle.index_dir import IndexManifest, NeedleError, build_bm25, build_dense, save_search_pipelines
from needle.index_generations import LAYOUT, check_target, previous_embeddings, remove_legacy, take_lock


def build_index(
    corpus: Path, out: Path, *, model: str, overwrite: bool, dense: bool = True, bm25: bool = False, lang: str = "en"
) -> IndexManifest:
    """
    Index CORPUS into a new generation of OUT: dense (FAISS + embeddings.npy) and/or BM25, manifest, pipelines.

    :raises NeedleError: missing corpus, nothing to build, or an OUT that is a file, read-only, or a stranger's
        non-empty directory (never written into).
        A failure while writing (full disk, read-only files) is a NeedleError too; the live index is unchanged.
    :raises DirectoryLockedError: another writer is building OUT now (the message names it).
    """
    corpus, out = Path(corpus), Path(out)
    if not corpus.is_file():
        raise NeedleError(f"corpus not found: {corpus}")
    if not dense and not bm25:
        raise NeedleError("nothing to build: --no-dense needs --bm25")
    check_target(out)
    with take_lock(out):
        check_target(out)  # again under the lock: another writer may have changed it meanwhile
        reuse = previous_embeddings(out) if dense else None
        built: dict[str, IndexManifest] = {}

        def write(partial: Path) -> dict[str, Any]:
            """Fill the new generation; remove it whole when anything fails, so no debris is left."""
            try:
                built["manifest"] = fill_generation(partial, out, corpus, model, overwrite, dense, bm25, lang, reuse)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            return built["manifest"].recorded()

        try:
            LAYOUT.write(out, write)
        except (OSError, PipelineRuntimeError) as error:
            cause = error.__cause__ if isinstance(error, PipelineRuntimeError) else error
            if not isinstance(cause, OSError):
                raise
            raise NeedleError(
                f"writing a new generation of {out} failed, so the live index is unchanged: {cause}"
            ) from error
        remove_legacy(out)
    return built["manifest"]


def fill_generation(
    partial: Path,
    out: Path,
    corpus: Path,
    model: str,
    overwrite: bool,
    dense: bool,
    bm25: bool,
    lang: str,
    reuse: Path | None,
) -> IndexManifest:
    """Build every part of one generation into PARTIAL and write its search pipelines; returns its manifest."""
    final = partial.name.removesuffix(".partial")
    modes: list[str] = []
    dim = None
    if dense:
        count, dim = build_dense(corpus, partial, model, overwrite, reuse)
        modes.append("dense")
    if bm25:
        # BM25 reads its documents from the dense part, named by the path it will have once live; the BM25
        # store records that path relative to its own directory, so the generation stays relocatable.
        documents_from = out.resolve() / final / "dense" if dense else None
        count = build_bm25(corpus, partial, lang, documents_from)
        modes.append("bm25")
    manifest = IndexManifest(
        corpus=corpus.name,
        documents=count,
        modes=modes,
        model=model if dense else None,
        dim=dim,
        bm25_lang=lang if bm25 else None,
        generation=final,
    )
    save_search_pipelines(partial, manifest, modes + (["hybrid", "rrf"] if len(modes) == 2 else []))
    return manifest
