"""The writer of one new generation: ``Build``, which ``LAYOUT.write`` calls to fill ``gen-NNNNNN.partial``.

It builds the parts by store: FAISS + BM25 + learned sparse (``fill_generation``), an image generation, or a Milvus
collection, then the manifest and the search pipelines; anything failing removes the partial directory whole, so
the live generation stays as it was. ``needle_retrieval.index.build`` checks the options and takes the lock first.
"""

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE
from needle_retrieval.errors import EmbeddingsNotReusable, NeedleError
from needle_retrieval.index.brought_build import build_dense_brought
from needle_retrieval.index.dense_type import FLAT, DenseIndexType
from needle_retrieval.index.embeddings_in import BroughtEmbeddings, bring_in
from needle_retrieval.index.manifest import IndexManifest, file_sha256
from needle_retrieval.index.options import DEFAULT_OPTIONS, IndexOptions
from needle_retrieval.index.parts import build_bm25, build_dense, build_sparse
from needle_retrieval.index.store_target import StoreChoice
from needle_retrieval.index.templates import save_search_pipelines
from needle_retrieval.pipelines.embedders import Recorded
from needle_retrieval.progress import note


@dataclass
class Build:
    """One ``needle index`` run: the writer ``LAYOUT.write`` calls to fill the new generation."""

    corpus: Path
    out: Path
    model: str
    overwrite: bool
    dense: bool
    bm25: bool
    lang: str
    target: StoreChoice
    reuse: Path | None
    seeded: bool  # reuse is a seed from elsewhere: re-encode when the embedder refuses it
    embedder: Recorded = (
        None  # the embedding backend (needle_retrieval.pipelines.embedders); None: sentence-transformers `model`
    )
    multimodal: bool = False  # an image corpus (needle_retrieval.index.images)
    chunk_size: int = DEFAULT_CHUNK_SIZE  # documents per pipeline run (needle_retrieval.index.streaming)
    index_type: DenseIndexType = FLAT  # the dense part's FAISS index (needle_retrieval.index.dense_type)
    options: IndexOptions = (
        DEFAULT_OPTIONS  # reader's duplicate-id rule, dense store settings (needle_retrieval.index.options)
    )
    brought: BroughtEmbeddings | None = None  # --embeddings, copied in first (needle_retrieval.index.embeddings_in)
    built: IndexManifest | None = None
    sparse: str | None = None  # --sparse MODEL: a learned sparse part encoded by that SparseEncoder

    @property
    def manifest(self) -> IndexManifest:
        """The manifest of the generation this build wrote."""
        if self.built is None:
            raise NeedleError(f"no generation of {self.out} was built")
        return self.built

    def write(self, partial: Path) -> dict[str, Any]:
        """Fill the new generation; remove it whole when anything fails, so no debris is left.

        A seed the embedder refuses (another model, another corpus) is dropped and the corpus encoded afresh;
        embeddings it kept are named on stderr once the parts are built (``needle: reused N embeddings from ...``),
        and so are those brought in (``needle: indexed N embeddings from FILE``).
        """
        digest = file_sha256(self.corpus)  # before reading it: a corpus edited meanwhile never matches later
        reused = self.reuse if self.dense and not self.overwrite else None  # the embedder refuses it, or reads it
        try:
            try:
                self.built = self.fill(partial, self.reuse)
            except EmbeddingsNotReusable as error:
                if self.brought is not None:  # checked with the corpus before: it changed since
                    raise NeedleError(
                        f"--embeddings {self.brought.matrix.path}: {self.corpus} changed while it was indexed ({error})"
                    ) from None
                if not self.seeded:
                    raise
                empty_directory(partial)
                self.built, reused = self.fill(partial, None), None
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        if reused is not None:
            note(f"reused {self.built.documents:,} embeddings from {reused}")
        if self.brought is not None:
            note(f"indexed {self.built.documents:,} embeddings from {self.brought.matrix.path}")
        self.built.corpus_sha256 = digest
        return self.built.recorded()

    def fill(self, partial: Path, reuse: Path | None) -> IndexManifest:
        """Build every part of the generation in PARTIAL, carrying over ``reuse``'s embeddings, or the brought ones
        (the FAISS store's build copies them as it indexes them; for Milvus they are written into PARTIAL first,
        where the document embedder reads them)."""
        if self.target.store == "milvus":
            if self.brought is not None:
                bring_in(self.brought, partial)
            return self.fill_milvus(partial, reuse)
        if self.multimodal:
            return self.fill_images(partial, reuse)
        return fill_generation(
            partial, self.out, self.corpus, self.model, self.overwrite, self.dense, self.bm25, self.lang, reuse,
            self.embedder, self.chunk_size, self.index_type, self.options, self.brought, self.sparse,
        )  # fmt: skip

    def fill_images(self, partial: Path, reuse: Path | None) -> IndexManifest:
        """Build an image generation (``needle_retrieval.index.images``) with the build's embedder spec (a parameter
        file's sentence-transformers settings; None: the image templates'); the FAISS store settings apply to its
        searches (its search pipelines are written again with them)."""
        from needle_retrieval.index.images import fill_image_generation

        manifest = fill_image_generation(
            partial, self.corpus, self.model, self.overwrite, reuse, self.options.batch_size, self.embedder
        )
        if self.options.recorded() is not None:
            manifest.store_settings = self.options.recorded()
            save_search_pipelines(partial, manifest, manifest.modes)
        return manifest

    def fill_milvus(self, partial: Path, reuse: Path | None) -> IndexManifest:
        """Build the generation's Milvus collection and write its search pipelines; returns its manifest.

        On a server, the collection is new to this generation (an existing one of that name belongs to someone
        else and is refused, untouched) and is dropped again when the build fails.
        """
        from needle_retrieval.index.milvus import build_milvus, check_new_collection, drop_collections
        from needle_retrieval.index.milvus_place import MilvusPlace

        final = partial.name.removesuffix(".partial")
        place = MilvusPlace.for_generation(self.target.uri, self.target.collection, final)
        if place.server:
            check_new_collection(place)
        try:
            count, dim = build_milvus(
                self.corpus, partial, place, model=self.model, overwrite=self.overwrite, bm25=self.bm25,
                lang=self.lang, reuse=reuse, embedder=self.embedder, chunk_size=self.chunk_size, options=self.options,
            )  # fmt: skip
            modes = ["dense", "bm25"] if self.bm25 else ["dense"]
            manifest = IndexManifest(
                corpus=self.corpus.name,
                documents=count,
                modes=modes,
                model=self.model,
                dim=dim,
                bm25_lang=self.lang if self.bm25 else None,
                store="milvus",
                uri=place.uri,
                collection=place.collection,
                embedder=self.embedder,
                store_settings=self.options.recorded(),
                generation=final,
            )
            save_search_pipelines(partial, manifest, modes + (["hybrid", "rrf"] if self.bm25 else []))
        except BaseException:
            if place.server:
                drop_collections(place.uri, [place.collection])
            raise
        return manifest


def empty_directory(directory: Path) -> None:
    """Remove everything inside DIRECTORY, keeping the directory."""
    for entry in directory.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


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
    embedder: Recorded = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    index_type: DenseIndexType = FLAT,
    options: IndexOptions = DEFAULT_OPTIONS,
    brought: BroughtEmbeddings | None = None,
    sparse: str | None = None,
) -> IndexManifest:
    """Build every part of one generation into PARTIAL and write its search pipelines; returns its manifest.

    ``brought``: the dense part's vectors, brought in (``--embeddings``): indexed as the corpus is read once
    (``brought_build``), the model never loaded.
    """
    final = partial.name.removesuffix(".partial")
    modes: list[str] = []
    dim = None
    if dense and brought is not None:
        count, dim = build_dense_brought(corpus, partial, brought, model, embedder, chunk_size, index_type, options)
    elif dense:
        count, dim = build_dense(corpus, partial, model, overwrite, reuse, embedder, chunk_size, index_type, options)
    if dense:
        modes.append("dense")
    if bm25:
        # BM25 reads its documents from the dense part, named by the path it will have once live; the BM25
        # store records that path relative to its own directory, so the generation stays relocatable.
        documents_from = out.resolve() / final / "dense" if dense else None
        count = build_bm25(corpus, partial, lang, documents_from, chunk_size, options)
        modes.append("bm25")
    if sparse:
        documents_from = out.resolve() / final / "dense" if dense else None  # as BM25's: the dense part's documents
        count = build_sparse(corpus, partial, sparse, documents_from, chunk_size, options)
        modes.append("sparse")
    manifest = IndexManifest(
        corpus=corpus.name,
        documents=count,
        modes=modes,
        model=model if dense else None,
        dim=dim,
        bm25_lang=lang if bm25 else None,
        embedder=embedder if dense else None,
        dense_index=index_type.recorded() if dense else None,
        store_settings=options.recorded() if dense else None,
        tenant_field=options.tenant_field,
        sparse_model=sparse or None,
        generation=final,
    )
    save_search_pipelines(partial, manifest, modes + (["hybrid", "rrf"] if manifest.fused_side else []))
    return manifest
