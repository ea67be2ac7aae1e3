"""`needle index --multimodal`: image corpora searched by text (the seed's ``is_multimodal``).

The corpus lines name images (``image_path``, relative to the corpus file; see
``components.converters.jsonl_image_corpus_reader``). ``pipelines/image_index.yaml`` embeds the images with a
CLIP-style model into the generation's FAISS store and ``embeddings.npy``, exactly where a text index keeps
its dense part, and the manifest records ``multimodal: true``. ``needle search`` then reads that field and
answers through ``pipelines/image_search.yaml`` (``image_batch_search.yaml`` for several queries): the query
text is embedded by the same model, so a text finds images with no extra flag.

An image index has a dense part only: BM25 needs text, and captions are optional, so ``--bm25``, ``--no-dense``
and the modes that need BM25 are refused with one line each. The Milvus store is not offered for images yet.

Built from an UltraRAG parameter file (``needle index --config`` with ``is_multimodal: true``), the build gets the
file's sentence-transformers backend as a recorded spec (``needle_retrieval.pipelines.embedders``), as a text build
does, and the image embedder takes from it what the text document embedder would: the model, ``batch_size``,
``trust_remote_code``, ``sentence_transformers_encode.normalize_embeddings`` (absent: true, the text rule) and the
device of ``gpu_ids`` (the first GPU listed: the image embedder has no multi-GPU pool). UltraRAG's retriever
encodes images and queries with that same ``normalize_embeddings``. The manifest records the spec, so every search
embeds its queries through the spec's query embedder, with the same normalisation. Without a file (``needle index
--multimodal``) the templates' settings apply: CLIP, normalised.
"""

import logging
from pathlib import Path
from typing import Any

import numpy as np

from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE, DEFAULT_MODEL
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.options import set_batch_size
from needle_retrieval.index.parts import carry_embeddings, embeddings_refused, save_store
from needle_retrieval.index.streaming import run_chunked
from needle_retrieval.index.templates import save_search_pipelines
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.embedders import DEFAULT_BACKEND, Recorded, backend_name, spec_of

logger = logging.getLogger(__name__)
DEFAULT_IMAGE_MODEL = "sentence-transformers/clip-ViT-B-32"
INDEX_TEMPLATE = "image_index"
# What the image embedder takes of the text document embedder a recorded spec makes (``device``: only when gpu_ids
# chose one, so the best device of the machine is used otherwise).
SPEC_SETTINGS = ("model", "batch_size", "normalize_embeddings", "trust_remote_code", "device")


def image_model(model: str) -> str:
    """The model of an image index: ``--model`` as given, or CLIP when it is the text default (MiniLM reads no
    images, so the text default means the user named no model)."""
    return DEFAULT_IMAGE_MODEL if model == DEFAULT_MODEL else model


def check_multimodal_options(*, dense: bool, bm25: bool, store: str, embedder: Recorded = None) -> None:
    """Refuse ``needle index --multimodal`` options that an image index cannot have, naming the flag (or the
    parameter file's key, for a recorded EMBEDDER spec)."""
    if bm25 or not dense:
        raise NeedleError("--multimodal builds a dense image index only: drop --bm25 and --no-dense")
    if store != "faiss":
        raise NeedleError(f"--multimodal keeps images in the FAISS store only: drop --store {store}")
    if embedder is not None and backend_name(embedder) != DEFAULT_BACKEND:
        raise NeedleError(
            "--multimodal embeds images with a sentence-transformers CLIP model (--model), no other backend"
        )
    spec = spec_of(embedder, local=True)
    encode = (spec.block.get("sentence_transformers_encode") or {}) if spec is not None else {}
    named = [key for key in ("psg_prompt_name", "psg_task") if encode.get(key) is not None]
    if named:
        raise NeedleError(
            f"backend_configs.sentence_transformers.sentence_transformers_encode.{named[0]} chooses a text prompt "
            "or task of the corpus, which images take none of: set it to null with is_multimodal: true"
        )


def set_image_embedder(data: dict[str, Any], embedder: Recorded) -> None:
    """Give the ``embedder`` of the image index template DATA the settings of the recorded EMBEDDER spec, as its
    text document embedder would have them (``SPEC_SETTINGS``); None keeps the template's."""
    spec = spec_of(embedder, local=True)
    if spec is None:
        return
    made = spec.document_embedder()["init_parameters"]
    params = data["components"]["embedder"]["init_parameters"]
    params.update({key: made[key] for key in SPEC_SETTINGS if key in made})
    gpus = spec.settings["gpu_ids"]
    if gpus is not None and len(gpus) > 1:
        logger.warning(f"gpu_ids: images are encoded on GPU {gpus[0]} only (the image embedder has no multi-GPU pool)")


def build_image_dense(
    corpus: Path,
    generation: Path,
    model: str,
    overwrite: bool,
    reuse: Path | None,
    batch_size: int | None = None,
    embedder: Recorded = None,
) -> tuple[int, int]:
    """Run pipelines/image_index.yaml into GENERATION with the settings of the recorded EMBEDDER spec (None: the
    template's), BATCH_SIZE images per encode batch (None: the spec's or the template's); returns (documents
    written, embedding dimension).

    The embedding file is carried over and checked exactly as a text index's
    (``needle_retrieval.index.parts.build_dense``), and the run shows the same progress: images counted batch by batch
    as they are encoded (one run over the whole corpus: the image embedder takes no chunks), then the FAISS store's save
    stage by stage.
    """
    npy = carry_embeddings(generation, reuse, overwrite)
    data = pf.load_template(INDEX_TEMPLATE)
    pf.set_init_param(data, "embedder.model", model)
    pf.set_init_param(data, "embedder.embedding_path", str(npy))
    pf.set_init_param(data, "embedder.overwrite", overwrite)
    pf.set_init_param(data, "writer.document_store.path", str(generation / "dense"))
    pf.set_init_param(data, "writer.document_store.autosave", False)
    set_image_embedder(data, embedder)
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
    partial: Path,
    corpus: Path,
    model: str,
    overwrite: bool,
    reuse: Path | None,
    batch_size: int | None = None,
    embedder: Recorded = None,
) -> IndexManifest:
    """Build the image part of one generation into PARTIAL (with the recorded EMBEDDER spec, None: the templates'
    embedders; BATCH_SIZE images per encode batch, None: the spec's or the template's) and write its search
    pipeline; returns its manifest, which records EMBEDDER so that searches embed queries by the same spec."""
    count, dim = build_image_dense(corpus, partial, model, overwrite, reuse, batch_size, embedder)
    manifest = IndexManifest(
        corpus=corpus.name,
        documents=count,
        modes=["dense"],
        model=model,
        dim=dim,
        multimodal=True,
        embedder=embedder,
        generation=partial.name.removesuffix(".partial"),
    )
    save_search_pipelines(partial, manifest, ["dense"])
    return manifest
