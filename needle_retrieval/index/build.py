"""`needle index`: build a whole new generation of an index directory beside the live one, then switch to it.

The build holds the directory's writer lock from start to end, writes every part (embeddings, dense, BM25,
manifest, search pipelines) into ``gen-NNNNNN.partial`` and makes it live with one atomic rename of the
pointer. Until then searches answer from the previous generation, and any failure (bad corpus line, full
disk, ``kill -9``) leaves that generation live and unchanged.

With ``store="milvus"`` the dense and BM25 parts are one Milvus collection (``needle_retrieval.index.milvus``): a Milvus
Lite database inside the generation, or a collection of its own on a server, which the alias ``<NAME>`` names
once the generation is live; the collections of generations the cleanup removes are dropped.
"""

from pathlib import Path

from haystack.core.errors import PipelineRuntimeError

from components.converters.jsonl_lines import count_objects
from components.stores.faiss.row_writes import TRAINING_SAMPLE
from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import check_chunk_size, check_corpus
from needle_retrieval.index.dense_type import FLAT, DenseIndexType, check_index_type_options
from needle_retrieval.index.embeddings_in import brought_embeddings, check_options, model_dimension
from needle_retrieval.index.generation_build import Build
from needle_retrieval.index.generations import LAYOUT, check_target, previous_embeddings, take_lock
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.options import DEFAULT_OPTIONS, IndexOptions, check_store_settings
from needle_retrieval.index.store_target import DEFAULT_TARGET, StoreChoice, retire_collections, server_collections
from needle_retrieval.index.tenant_corpus import check_tenant_field
from needle_retrieval.pipelines.embedders import Recorded
from needle_retrieval.progress import Stages

# StoreChoice lives in store_target and Build in generation_build; both stay importable from here, where callers of
# build_index (the CLI, eval, UltraRAG) and the tests that hold a build open reach them.
__all__ = ["Build", "StoreChoice", "build_index", "check_sparse_options"]


def build_index(
    corpus: Path,
    out: Path,
    *,
    model: str,
    overwrite: bool,
    dense: bool = True,
    bm25: bool = False,
    lang: str = "en",
    target: StoreChoice = DEFAULT_TARGET,
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
