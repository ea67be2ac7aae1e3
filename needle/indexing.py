"""`needle index`: build the parts of an index directory from a corpus and record them in the manifest."""

from pathlib import Path

from needle.index_dir import IndexManifest, NeedleError, build_bm25, build_dense, save_search_pipelines


def build_index(
    corpus: Path, out: Path, *, model: str, overwrite: bool, dense: bool = True, bm25: bool = False, lang: str = "en"
) -> IndexManifest:
    """Index CORPUS into OUT: dense (FAISS + embeddings.npy) and/or BM25, then write manifest and pipelines."""
    if not corpus.is_file():
        raise NeedleError(f"corpus not found: {corpus}")
    if not dense and not bm25:
        raise NeedleError("nothing to build: --no-dense needs --bm25")
    out.mkdir(parents=True, exist_ok=True)
    modes: list[str] = []
    dim = None
    if dense:
        count, dim = build_dense(corpus, out, model, overwrite)
        modes.append("dense")
    if bm25:
        count = build_bm25(corpus, out, lang, share_documents=dense)
        modes.append("bm25")
    manifest = IndexManifest(
        corpus=str(corpus.resolve()), documents=count, modes=modes,
        model=model if dense else None, dim=dim, bm25_lang=lang if bm25 else None,
    )
    manifest.save(out)
    save_search_pipelines(out, manifest, modes + (["hybrid", "rrf"] if len(modes) == 2 else []))
    return manifest
