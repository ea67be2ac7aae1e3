"""`needle index --multimodal`: image corpora searched by text (the seed's ``is_multimodal``).

The corpus lines name images (``image_path``, relative to the corpus file; see
``components.converters.jsonl_image_corpus_reader``). ``pipelines/image_index.yaml`` embeds the images with a
CLIP-style model into the generation's FAISS store and ``embeddings.npy``, exactly where a text index keeps
its dense part, and the manifest records ``multimodal: true``. ``needle search`` then reads that field and
answers through ``pipelines/image_search.yaml`` (``image_batch_search.yaml`` for several queries): the query
text is embedded by the same model, so a text finds images with no extra flag.

An image index has a dense part only: BM25 needs text, and captions are optional, so ``--bm25``, ``--no-dense``
and the modes that need BM25 are refused with one line each. The Milvus store is not offered for images yet.
"""

from pathlib import Path

import numpy as np

from needle.defaults import DEFAULT_CHUNK_SIZE, DEFAULT_MODEL
from needle.errors import NeedleError
from needle.index.manifest import IndexManifest
from needle.index.options import set_batch_size
from needle.index.parts import carry_embeddings, embeddings_refused, save_store
from needle.index.streaming import run_chunked
from needle.index.templates import save_search_pipelines
from needle.pipelines import files as pf

DEFAULT_IMAGE_MODEL = "sentence-transformers/clip-ViT-B-32"
INDEX_TEMPLATE = "image_index"


def image_model(model: str) -> str:
    """The model of an image index: ``--model`` as given, or CLIP when it is the text default (MiniLM reads no
    images, so the text default means the user named no model)."""
    return DEFAULT_IMAGE_MODEL if model == DEFAULT_MODEL else model


def check_multimodal_options(*, dense: bool, bm25: bool, store: str, embedder: object = None) -> None:
    """Refuse ``needle index --multimodal`` options that an image index cannot have, naming the flag."""
    if bm25 or not dense:
        raise NeedleError("--multimodal builds a dense image index only: drop --bm25 and --no-dense")
    if store != "faiss":
        raise NeedleError(f"--multimodal keeps images in the FAISS store only: drop --store {store}")
    if embedder is not None:
        raise NeedleError(
            "--multimodal embeds images with a sentence-transformers CLIP model (--model), no other backend"
        )


def build_image_dense(
    corpus: Path, generation: Path, model: str, overwrite: bool, reuse: Path | None, batch_size: int | None = None
) -> tuple[int, int]:
    """Run pipelines/image_index.yaml into GENERATION, BATCH_SIZE images per encode batch (None: the template's);
    returns (documents written, embedding dimension).

    The embedding file is carried over and checked exactly as a text index's (``needle.index.parts.build_dense``),
    and the run shows the same progress: images counted batch by batch as they are encoded (one run over the
    whole corpus: the image embedder takes no chunks), then the FAISS store's save stage by stage.
    """
    npy = carry_embeddings(generation, reuse, overwrite)
    data = pf.load_template(INDEX_TEMPLATE)
    pf.set_init_param(data, "embedder.model", model)
    pf.set_init_param(data, "embedder.embedding_path", str(npy))
    pf.set_init_param(data, "embedder.overwrite", overwrite)
    pf.set_init_param(data, "writer.document_store.path", str(generation / "dense"))
    pf.set_init_param(data, "writer.document_store.autosave", False)
    set_batch_size(data, batch_size)
    pipeline = pf.build(data)
    with embeddings_refused():
        written = run_chunked(pipeline, corpus, DEFAULT_CHUNK_SIZE, "Indexing (images)")
    save_store(pipeline, "images")
    return written, int(np.load(npy, mmap_mode="r").shape[1])


def check_image_mode(manifest: IndexManifest, mode: str, index_dir: Path) -> None:
    """Refuse every search mode but dense on an image index, in one line."""
    if manifest.multimodal and mode != "dense":
        raise NeedleError(f"index {index_dir} is a multimodal (image) index: it answers --mode dense only, not {mode}")


def fill_image_generation(
    partial: Path, corpus: Path, model: str, overwrite: bool, reuse: Path | None, batch_size: int | None = None
) -> IndexManifest:
    """Build the image part of one generation into PARTIAL (BATCH_SIZE images per encode batch, None: the
    template's) and write its search pipeline; returns its manifest."""
    count, dim = build_image_dense(corpus, partial, model, overwrite, reuse, batch_size)
    manifest = IndexManifest(
        corpus=corpus.name,
        documents=count,
        modes=["dense"],
        model=model,
        dim=dim,
        multimodal=True,
        generation=partial.name.removesuffix(".partial"),
    )
    save_search_pipelines(partial, manifest, ["dense"])
    return manifest
