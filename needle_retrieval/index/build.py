"""`needle index`: build a whole new generation of an index directory beside the live one, then switch to it.

The build holds the directory's writer lock from start to end, writes every part (embeddings, dense, BM25,
manifest, search pipelines) into ``gen-NNNNNN.partial`` and makes it live with one atomic rename of the
pointer. Until then searches answer from the previous generation, and any failure (bad corpus line, full
disk, ``kill -9``) leaves that generation live and unchanged.

With ``store="milvus"`` the dense and BM25 parts are one Milvus collection (``needle_retrieval.index.milvus``): a Milvus
Lite database inside the generation, or a collection of its own on a server, which the alias ``<NAME>`` names
once the generation is live; the collections of generations the cleanup removes are dropped.
"""

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack.core.errors import PipelineRuntimeError
from haystack.document_stores.errors import DocumentStoreError

from components.converters.jsonl_lines import count_objects
from components.stores.crash_safe_generations import MANIFEST, load_json
from components.stores.faiss.row_writes import TRAINING_SAMPLE
from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE
from needle_retrieval.errors import EmbeddingsNotReusable, NeedleError
from needle_retrieval.index.brought_build import build_dense_brought
from needle_retrieval.index.checks import check_chunk_size, check_corpus
from needle_retrieval.index.dense_type import FLAT, DenseIndexType, check_index_type_options
from needle_retrieval.index.embeddings_in import (
    BroughtEmbeddings,
    bring_in,
    brought_embeddings,
    check_options,
    model_dimension,
)
from needle_retrieval.index.generations import GENERATION, LAYOUT, check_target, previous_embeddings, take_lock
from needle_retrieval.index.manifest import IndexManifest, file_sha256
from needle_retrieval.index.options import DEFAULT_OPTIONS, IndexOptions, check_store_settings
from needle_retrieval.index.parts import build_bm25, build_dense, build_sparse
from needle_retrieval.index.templates import save_search_pipelines
from needle_retrieval.index.tenant_corpus import check_tenant_field
from needle_retrieval.pipelines.embedders import Recorded
from needle_retrieval.progress import Stages, note

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoreChoice:
    """Where the parts of an index go: ``faiss`` (FAISS + bm25s in the generation) or ``milvus``.

    ``uri`` (a Milvus server URL; None keeps a Milvus Lite database in each generation) and ``collection``
    (default ``needle``) apply to ``milvus`` only.
    """

    store: str = "faiss"
    uri: str | None = None
    collection: str | None = None


def build_index(
    corpus: Path,
    out: Path,
    *,
    model: str,
    overwrite: bool,
    dense: bool = True,
    bm25: bool = False,
    lang: str = "en",
    target: StoreChoice = StoreChoice(),
    seed: Path | None = None,
    encode: bool = True,
    embedder: Recorded = None,
    multimodal: bool = False,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    index_type: DenseIndexType = FLAT,
    options: IndexOptions = DEFAULT_OPTIONS,
    embeddings: Path | None = None,
    sparse: str | None = None,
) -> IndexManifest:
    """
    Index CORPUS into a new generation of OUT: dense (FAISS or Milvus + embeddings.npy) and/or BM25, manifest,
    pipelines.

    ``seed``: an embedding file to carry over when OUT has none of its own (e.g. another index of the same corpus);
    one the embedder refuses is re-encoded rather than an error.
    ``encode``: False indexes SEED's vectors as they are (UltraRAG's ``retriever_index``): the previous generation's
    embeddings are not taken, the model is never loaded, and a seed the embedder refuses is an error
    (``EmbeddingsNotReusable``), never a re-encode.
    ``embedder``: the embedding backend as the manifest records it (``needle_retrieval.pipelines.embedders``; MODEL
    names its model); None: sentence-transformers MODEL.
    ``chunk_size``: documents read, embedded and written per pipeline run (``needle_retrieval.index.streaming``).
    ``index_type``: the FAISS index of the dense part, flat or HNSW (``needle_retrieval.index.dense_type``).
    ``options``: the corpus reader's rule for repeated ids and the dense store's own settings, which the manifest
    records for every search, and the document embedder's batch size, which it does not
    (``needle_retrieval.index.options``).
    ``embeddings``: a ``.npy`` of the corpus's vectors computed elsewhere (row i = corpus document i, float32 or
    float16), checked and copied into the generation, and indexed without loading MODEL
    (``needle_retrieval.index.embeddings_in``); not with ``overwrite``, ``seed``, ``multimodal`` or without ``dense``.
    ``sparse``: a sentence-transformers SparseEncoder (SPLADE-style; hub id or local directory) whose document
    vectors make a learned sparse part (sparse/, ``components.stores.sparse``); the manifest records the model and
    every sparse search encodes queries with it. With a dense part, hybrid and rrf fuse dense with it instead of BM25.

    :raises NeedleError: missing corpus, nothing to build, or an OUT that is a file, read-only, or a stranger's
        non-empty directory (never written into); a Milvus option that does not fit (naming the flag).
        A failure while writing (full disk, read-only files) is a NeedleError too; the live index is unchanged.
    :raises DirectoryLockedError: another writer is building OUT now (the message names it).
    """
    corpus, out = Path(corpus), Path(out)
    chunk_size = check_chunk_size(chunk_size)
    check_corpus(corpus)
    if not dense and not bm25 and not sparse:
        raise NeedleError("nothing to build: --no-dense needs --bm25 or --sparse")
    check_sparse_options(sparse, target.store, multimodal)
    check_index_type_options(index_type, store=target.store, dense=dense, multimodal=multimodal)
    if index_type.kind.startswith("ivf"):  # nlist sized to the corpus and the vectors it trains on
        training = TRAINING_SAMPLE if embeddings is not None else chunk_size  # a file trains on a sample of it
        index_type = index_type.fitted(count_objects(corpus), training)
    problem = check_store_settings(target.store, options.recorded() if dense else None)
    if problem is not None:
        raise NeedleError(problem)
    if options.tenant_field is not None and target.store != "faiss":
        raise NeedleError("--tenant-field is for --store faiss; a Milvus collection takes --partition-key KEY")
    if options.tenant_field is not None:
        check_tenant_field(corpus, options.tenant_field)
    if target.store == "milvus":
        from needle_retrieval.index.milvus import check_milvus_options

        check_milvus_options(target.uri, target.collection, lang, dense)
    if multimodal:  # an image corpus embedded by a CLIP-style model (needle_retrieval.index.images)
        from needle_retrieval.index.images import check_multimodal_options, image_model

        check_multimodal_options(dense=dense, bm25=bm25, store=target.store, embedder=embedder)
        model = image_model(model) if embedder is None else model  # a recorded spec names its model itself
    if embeddings is not None:
        check_options(dense, multimodal, overwrite, seed, options)
    check_target(out)
    brought = None
    if embeddings is not None:  # checked against the corpus and the model before the lock (the corpus is read)
        faiss = target.store == "faiss"  # its build reads the corpus once and fingerprints it as it goes
        brought = brought_embeddings(Path(embeddings), corpus, model, embedder, options, deferred=faiss)
    if dense and index_type.kind == "ivf-pq":  # --pq-m must divide the dimension: refused before anything is built
        dim = brought.matrix.dim if brought is not None else model_dimension(model, embedder)
        if dim is not None:
            index_type.check_dimension(dim)
    with take_lock(out):
        check_target(out)  # again under the lock: another writer may have changed it meanwhile
        with Stages(desc="Reusing (embeddings)", unit="bytes") as report:  # the old file's sha256, before reuse
            # --overwrite re-encodes; encode=False takes SEED only, --embeddings its own file
            keep = dense and encode and brought is None and not overwrite
            reuse = previous_embeddings(out, report) if keep else None
        seeded = reuse is None and seed is not None and encode
        build = Build(
            corpus, out, model, overwrite, dense, bm25, lang, target, reuse or seed, seeded, embedder, multimodal,
            chunk_size, index_type, options, brought, sparse=sparse,
        )  # fmt: skip
        before = server_collections(out, target)
        try:
            with Stages(desc="Saving (generation)", unit="bytes") as report:  # its files' sha256, for the manifest
                LAYOUT.write(out, build.write, on_progress=report)
        except (OSError, PipelineRuntimeError) as error:
            cause = error.__cause__ if isinstance(error, PipelineRuntimeError) else error
            if not isinstance(cause, OSError):
                raise
            raise NeedleError(
                f"writing a new generation of {out} failed, so the live index is unchanged: {cause}"
            ) from error
        if target.store == "milvus" and target.uri is not None:
            from needle_retrieval.index.milvus import point_alias
            from needle_retrieval.index.milvus_place import DEFAULT_COLLECTION

            point_alias(target.uri, target.collection or DEFAULT_COLLECTION, str(build.manifest.collection))
        retire_collections(out, before)
    return build.manifest


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


def server_collections(out: Path, target: StoreChoice) -> dict[str, tuple[str, str]]:
    """Generation name -> (server URI, collection) for the generations of OUT that have a server collection:
    complete ones by their manifest, partial ones by their would-be name on the target server (a killed build
    may have left that collection)."""
    from needle_retrieval.index.milvus_place import MilvusPlace, is_server

    found: dict[str, tuple[str, str]] = {}
    for entry in out.iterdir() if out.is_dir() else []:
        if not GENERATION.fullmatch(entry.name):
            continue
        name = entry.name.removesuffix(".partial")
        if entry.name.endswith(".partial"):
            if target.store == "milvus" and target.uri is not None:
                found[name] = (target.uri, MilvusPlace.for_generation(target.uri, target.collection, name).collection)
            continue
        try:
            recorded = load_json(entry / MANIFEST)
        except DocumentStoreError:
            continue  # a damaged generation names no collection we could be sure of
        if not isinstance(recorded, dict):
            continue
        uri, collection = recorded.get("uri"), recorded.get("collection")
        if isinstance(uri, str) and is_server(uri) and isinstance(collection, str):
            found[name] = (uri, collection)
    return found


def retire_collections(out: Path, before: dict[str, tuple[str, str]]) -> None:
    """Drop the server collections of the generations that are gone from OUT (the cleanup after a switch).

    The new generation is live by then, so a server that cannot be reached only leaves a warning (and the
    collection behind), not a failed build.
    """
    from needle_retrieval.index.milvus import drop_collections

    for generation, (uri, collection) in before.items():
        if (out / generation).is_dir():
            continue
        try:
            drop_collections(uri, [collection])
        except DocumentStoreError as error:
            logger.warning("could not drop %s of the removed generation %s: %s", collection, generation, error)


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


def check_sparse_options(sparse: str | None, store: str, multimodal: bool) -> None:
    """Refuse ``--sparse`` where no learned sparse part can be built, naming the flag."""
    if sparse is None:
        return
    if not isinstance(sparse, str) or not sparse.strip():
        raise NeedleError(f"--sparse needs a SparseEncoder model (a hub id or a local directory), got {sparse!r}")
    if store != "faiss":
        raise NeedleError("--sparse builds a part beside FAISS and BM25: it does not go with --store milvus")
    if multimodal:
        raise NeedleError("--sparse encodes text: it does not go with --multimodal")
