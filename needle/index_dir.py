"""An index directory as the CLI builds it: generations, each holding a manifest plus one part per retrieval mode.

Layout of one generation (see ``needle.index_generations`` for the directory around it)::

    DIR/gen-NNNNNN/manifest.json        model, dimension, corpus file name, document count, modes, the size and
                                        sha256 of every file, the generation and manifest sha256 of dense/ and
                                        bm25/ (``needle.index_generations`` says when each is checked)
    DIR/gen-NNNNNN/embeddings.npy       corpus embeddings, row i = corpus line i (+ its fingerprint .json)
    DIR/gen-NNNNNN/dense/               FAISS document store (vectors + documents)
    DIR/gen-NNNNNN/bm25/                BM25 index (when built with --bm25; reads documents from dense/)
    DIR/gen-NNNNNN/milvus.db/           instead of dense/ and bm25/ with --store milvus: a Milvus Lite database
                                        (or, with --uri, a collection on a server: see ``needle.milvus_index``)
    DIR/gen-NNNNNN/<mode>_search.yaml   the search pipelines, with paths relative to DIR: they load with DIR as
                                        the working directory
    DIR/gen-NNNNNN/hayhooks/<mode>_search/pipeline_wrapper.py
                                        one Hayhooks pipeline per search pipeline, serving its YAML file from any
                                        working directory: `hayhooks run --pipelines-dir DIR/gen-NNNNNN/hayhooks`
                                        (see ``needle.hayhooks_wrapper``)

``fill_search_pipeline`` gives the same pipelines with absolute paths for wherever DIR is now. Both carry a fusion
setting (``needle.fusion``): a saved generation the index's own (DIR/fusion.json when `needle tune` wrote one, else
the defaults), a pipeline built in memory that one or the setting its caller names (``--fusion``).
"""

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from haystack import Document
from haystack.core.errors import PipelineRuntimeError

from components.embedders.embedder_factory import manifest_record
from components.embedders.embedding_file import EmbeddingFileError
from components.stores.crash_safe_generations import MANIFEST
from components.stores.crash_safe_generations import STORES as SAVED_STORES
from needle import pipeline_files as pf
from needle.backends import Recorded, set_document_embedder, set_query_embedder, spec_of
from needle.cli_options import DEFAULT_MODEL, STORES
from needle.dense_index_type import FLAT, DenseIndexType
from needle.fusion import FusionSetting, apply_fusion, index_fusion
from needle.index_generations import EMBEDDINGS, NeedleError, link_or_copy, read_live, rebuild_hint
from needle.index_options import DEFAULT_OPTIONS, IndexOptions, apply_store_settings, check_store_settings
from needle.index_streaming import DEFAULT_CHUNK_SIZE, run_chunked

__all__ = ["DEFAULT_MODEL", "IndexManifest", "NeedleError", "as_hits", "fill_search_pipeline"]

PARTS = ("dense", "bm25")
# The search pipeline of each mode over a Milvus collection: hybrid is the same MixRetrieveRanker fusion as over
# FAISS + bm25s, rrf is Milvus's own hybrid search (its RRF ranker).
MILVUS_TEMPLATES = {"dense": "milvus_dense", "bm25": "milvus_bm25", "hybrid": "milvus_mix", "rrf": "milvus_hybrid"}


SHA256 = re.compile(r"[0-9a-f]{64}")


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (a corpus of any size in constant memory); a manifest
    records it so a later run can tell the same corpus content from an edited file of the same name and size."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class EmbeddingsNotReusable(NeedleError):
    """The embedding file carried over from another generation or index was built for another model or corpus."""


class Hit(TypedDict):
    """One search result in the CLI's --json output."""

    id: str
    score: float | None
    content: str | None


@dataclass
class IndexManifest:
    """What an index generation holds and how it was built; searches check queries against it."""

    corpus: str
    documents: int
    modes: list[str]
    model: str | None = None
    dim: int | None = None
    bm25_lang: str | None = None
    store: str = "faiss"  # manifests written before Milvus have no store: they are FAISS indexes
    uri: str | None = None  # milvus: a server URL, or the Lite database relative to the generation
    collection: str | None = None  # milvus: the collection of this generation
    multimodal: bool = False  # images embedded by a CLIP-style model (needle.multimodal_index); recorded when true
    embedder: dict[str, Any] | None = None  # the backend (needle.backends); None: sentence-transformers `model`
    dense_index: dict[str, Any] | None = None  # FAISS index type (needle.dense_index_type); None: flat
    corpus_sha256: str | None = None  # sha256 of the corpus file's bytes (file_sha256); None in older manifests
    store_settings: dict[str, Any] | None = None  # the dense store's own settings (needle.index_options); None: none
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    generation: str = field(default="", compare=False)  # the directory it was read from; not recorded in it

    def recorded(self) -> dict[str, Any]:
        """The fields recorded in the generation's manifest (everything but ``generation``; Milvus places only
        for a Milvus index)."""
        unused = {"generation"} | ({"uri", "collection"} if self.store == "faiss" else set())
        unused |= set() if self.multimodal else {"multimodal"}
        unused |= {"embedder"} if self.embedder is None else set()
        unused |= {"dense_index"} if self.dense_index is None else set()
        unused |= {"corpus_sha256"} if self.corpus_sha256 is None else set()
        unused |= {"store_settings"} if self.store_settings is None else set()
        kept = {k: v for k, v in asdict(self).items() if k not in unused}
        if self.embedder is not None:  # the build's own record may name the user's Infinity venv: never kept
            kept["embedder"] = manifest_record(self.embedder)
        return kept

    @classmethod
    def load(cls, index_dir: Path) -> "IndexManifest":
        """Read the manifest of DIR's live generation, or explain in one line what is missing or broken."""
        index_dir = Path(index_dir)
        generation, recorded = read_live(index_dir)
        names = {f.name for f in fields(cls)} - {"generation"}
        try:
            manifest = cls(**{k: v for k, v in recorded.items() if k in names}, generation=generation.name)
        except TypeError as e:
            raise NeedleError(f"corrupted index manifest in {generation}: {e}") from e
        manifest.check(generation)
        manifest.check_parts(generation, recorded.get(SAVED_STORES, {}))
        return manifest

    def check_parts(self, generation: Path, stores: dict[str, Any]) -> None:
        """A FAISS index holds exactly one store per mode (``dense/``, ``bm25/``), each bound to this manifest by
        its generation and manifest digest (checked by ``read_live``), so no part is read that it did not build."""
        if self.store == "faiss" and sorted(stores) != sorted(self.modes):
            raise NeedleError(
                f"corrupted index manifest in {generation / MANIFEST}: modes {self.modes!r} but it records the "
                f"parts {sorted(stores)!r}; {rebuild_hint(generation.parent)}"
            )

    def check(self, generation: Path) -> None:
        """Refuse field values no build writes (a tampered or damaged manifest), naming the field."""
        where = f"corrupted index manifest in {generation}"
        if not isinstance(self.documents, int) or isinstance(self.documents, bool) or self.documents < 0:
            raise NeedleError(f"{where}: documents must be a count, got {self.documents!r}")
        if (
            not isinstance(self.modes, list)
            or not self.modes
            or not set(self.modes) <= set(PARTS)
            or len(set(self.modes)) != len(self.modes)
        ):
            raise NeedleError(f"{where}: modes must list some of {', '.join(PARTS)}, got {self.modes!r}")
        if "dense" in self.modes and not (isinstance(self.model, str) and isinstance(self.dim, int) and self.dim > 0):
            raise NeedleError(
                f"{where}: a dense part needs a model name and a dimension, got {self.model!r}, {self.dim!r}"
            )
        if self.corpus_sha256 is not None and not (
            isinstance(self.corpus_sha256, str) and SHA256.fullmatch(self.corpus_sha256)
        ):
            raise NeedleError(f"{where}: corpus_sha256 must be 64 lowercase hex digits, got {self.corpus_sha256!r}")
        if self.store not in STORES:
            raise NeedleError(f"{where}: store must be one of {', '.join(STORES)}, got {self.store!r}")
        settings_problem = check_store_settings(self.store, self.store_settings)
        if settings_problem is not None:
            raise NeedleError(f"{where}: {settings_problem}")
        if self.store == "milvus":
            from needle.milvus_index import check_recorded

            problem = check_recorded(self.uri, self.collection)
            if problem is None and "dense" not in self.modes:
                problem = f"a Milvus index has a dense part, got modes {self.modes!r}"
            if problem is not None:
                raise NeedleError(f"{where}: {problem}")
        from needle.multimodal_index import check_recorded as check_multimodal

        image_problem = check_multimodal(self)
        if image_problem is not None:
            raise NeedleError(f"{where}: {image_problem}")
        try:
            spec_of(self.embedder)
            DenseIndexType.from_recorded(self.dense_index)
        except NeedleError as error:
            raise NeedleError(f"{where}: {error}") from None

    def template(self, mode: str, batch: bool = False) -> str:
        """The pipelines/ template that searches this index in MODE (its batch variant with ``batch``)."""
        name = MILVUS_TEMPLATES[mode] if self.store == "milvus" else mode
        if self.multimodal:
            from needle.multimodal_index import SEARCH_TEMPLATE

            name = SEARCH_TEMPLATE
        return f"{name}_batch" if batch else name


def carry_embeddings(generation: Path, reuse: Path | None, overwrite: bool) -> Path:
    """Link ``reuse`` (an earlier embedding file and its fingerprint) into GENERATION unless re-encoding;
    returns the generation's embedding path. The embedder keeps the file only when its fingerprint matches."""
    npy = generation / EMBEDDINGS
    if reuse is not None and not overwrite:
        link_or_copy(reuse, npy)
        sidecar = Path(f"{reuse}.json")
        if sidecar.is_file():
            link_or_copy(sidecar, Path(f"{npy}.json"))
    return npy


def build_dense(
    corpus: Path,
    generation: Path,
    model: str,
    overwrite: bool,
    reuse: Path | None,
    embedder: Recorded = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    index_type: DenseIndexType = FLAT,
    options: IndexOptions = DEFAULT_OPTIONS,
) -> tuple[int, int]:
    """
    Run pipelines/dense_index.yaml into GENERATION, once per CHUNK_SIZE documents (``needle.index_streaming``),
    saving the FAISS store once at the end; returns (documents written, embedding dimension).

    ``embedder``: the backend as a manifest records it (``needle.backends``); None: sentence-transformers MODEL.
    ``index_type``: the FAISS index (flat or HNSW, ``needle.dense_index_type``).
    ``options``: the reader's duplicate-id rule and the FAISS store's settings (``needle.index_options``).

    ``reuse`` is the previous generation's embedding file: linked in first, the embedder keeps it when its
    fingerprint matches this model and corpus, and refuses it otherwise (``--overwrite`` re-encodes).
    """
    npy = carry_embeddings(generation, reuse, overwrite)
    data = pf.load_template("dense_index")
    set_document_embedder(data, model, str(npy), overwrite, embedder)
    pf.set_init_param(data, "writer.document_store.path", str(generation / "dense"))
    set_index_type(data, "writer", index_type)
    pf.set_init_param(data, "writer.document_store.autosave", False)
    options.apply(data, writes_dense=True)
    pipeline = pf.build(data)
    with embeddings_refused():
        written = run_chunked(pipeline, corpus, chunk_size, "Indexing (dense)")
    pipeline.get_component("writer").document_store.save()  # type: ignore[attr-defined]
    return written, int(np.load(npy, mmap_mode="r").shape[1])


def set_index_type(data: dict[str, Any], component: str, index_type: DenseIndexType) -> None:
    """Give COMPONENT's FAISS store the index type's ``index_factory`` and ``search_params``."""
    pf.set_init_param(data, f"{component}.document_store.index_factory", index_type.factory())
    if index_type.search_params() is not None:
        pf.set_init_param(data, f"{component}.document_store.search_params", index_type.search_params())


@contextmanager
def embeddings_refused() -> Iterator[None]:
    """Turn an index pipeline's refusal of a carried-over embedding file into ``EmbeddingsNotReusable``."""
    try:
        yield
    except PipelineRuntimeError as e:
        if isinstance(e.__cause__, EmbeddingFileError):
            raise EmbeddingsNotReusable(
                f"the index's embeddings cannot be reused ({e.__cause__}); rerun with --overwrite"
            ) from e
        raise


def build_bm25(
    corpus: Path,
    generation: Path,
    lang: str,
    documents_from: Path | None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    options: IndexOptions = DEFAULT_OPTIONS,
) -> int:
    """
    Run pipelines/bm25_index.yaml into GENERATION/bm25, once per CHUNK_SIZE documents, saving the BM25 store
    (one bm25s index over every chunk's term ids) once at the end; returns the number of documents written.

    ``documents_from``: the dense part of the same generation, where it will be once live; the BM25 part then
    stores no documents of its own and reads them from there. ``options``: the reader's duplicate-id rule.
    """
    data = pf.load_template("bm25_index")
    pf.set_init_param(data, "writer.document_store.path", str(generation / "bm25"))
    pf.set_init_param(data, "writer.document_store.lang", lang)
    if documents_from is not None:
        pf.set_init_param(data, "writer.document_store.document_store_path", str(documents_from))
    pf.set_init_param(data, "writer.document_store.autosave", False)
    options.apply(data, writes_dense=False)
    pipeline = pf.build(data)
    written = run_chunked(pipeline, corpus, chunk_size, "Indexing (BM25)")
    pipeline.get_component("writer").document_store.save()  # type: ignore[attr-defined]
    return written


def search_pipeline(base: Path, manifest: IndexManifest, name: str, top_k: int = 5) -> dict[str, Any]:
    """Fill pipelines/<name>_search.yaml with the paths of the manifest's generation under BASE, model and top_k.

    ``name`` is a template name (``IndexManifest.template``), e.g. ``dense``, ``hybrid_batch`` or ``milvus_mix``.
    """
    data = pf.load_template(f"{name}_search")
    names = list(data["components"])
    root = base / manifest.generation
    if "embedder" in names:
        set_query_embedder(data, manifest.model, manifest.embedder)
    for component in names:
        params = data["components"][component]["init_parameters"]
        store = params.get("document_store")
        if store is not None and "Milvus" in store["type"]:
            _set_milvus_store(data, component, manifest, root)
        elif store is not None:
            sub = "dense" if "FAISS" in store["type"] else "bm25"
            pf.set_init_param(data, f"{component}.document_store.path", str(root / sub))
            if sub == "dense":
                set_index_type(data, component, DenseIndexType.from_recorded(manifest.dense_index))
                apply_store_settings(data, component, manifest.store_settings)
            if sub == "bm25":
                shared = str(root / "dense") if "dense" in manifest.modes else None
                pf.set_init_param(data, f"{component}.document_store.document_store_path", shared)
        if "top_k" in params:
            # The component that answers gets top_k; candidate generators before it keep at least as many.
            final = component == data["outputs"]["documents"].split(".", 1)[0]
            pf.set_init_param(data, f"{component}.top_k", top_k if final else max(top_k, params["top_k"]))
    return data


def _set_milvus_store(data: dict[str, Any], component: str, manifest: IndexManifest, root: Path) -> None:
    """Point a Milvus store at the generation's collection (its Lite database under ROOT, or the server)."""
    from needle.milvus_index import MilvusPlace, store_params

    place = MilvusPlace(str(manifest.uri), str(manifest.collection))  # both strings: IndexManifest.check
    params = store_params(place.uri_under(root), place.collection, "bm25" in manifest.modes, manifest.bm25_lang)
    for key, value in params.items():
        pf.set_init_param(data, f"{component}.document_store.{key}", value)
    apply_store_settings(data, component, manifest.store_settings)


def fill_search_pipeline(
    index_dir: Path, manifest: IndexManifest, name: str, top_k: int = 5, fusion: FusionSetting | None = None
) -> dict[str, Any]:
    """Fill pipelines/<name>_search.yaml with absolute paths of the manifest's generation where DIR is now,
    and the fusion parameters of FUSION (None: the index's own, ``needle.fusion.index_fusion``)."""
    setting = index_fusion(Path(index_dir)) if fusion is None else fusion
    return apply_fusion(search_pipeline(Path(index_dir).resolve(), manifest, name, top_k), setting)


def save_search_pipelines(generation: Path, manifest: IndexManifest, modes: list[str]) -> None:
    """Write <mode>_search.yaml for each mode into GENERATION, with paths relative to the index directory, and the
    Hayhooks wrapper that serves it (``save_hayhooks_wrapper``). The pipelines carry the index's own fusion
    setting as it is now: `needle tune` and `needle tune --reset` publish a new generation to change it."""
    setting = index_fusion(generation.parent)
    for mode in modes:
        data = apply_fusion(search_pipeline(Path("."), manifest, manifest.template(mode)), setting)
        pf.dump(data, generation / f"{mode}_search.yaml")
        save_hayhooks_wrapper(generation, f"{mode}_search")


HAYHOOKS_DIR = "hayhooks"  # DIR/gen-NNNNNN/hayhooks: the --pipelines-dir of `hayhooks run`
HAYHOOKS_WRAPPER = '''"""Hayhooks pipeline `{name}`: this index generation's {name}.yaml, as `needle index` wrote it.

Serve every search pipeline of the generation with `hayhooks run --pipelines-dir DIR/gen-NNNNNN/hayhooks`
(from any working directory, no other set-up); see needle/hayhooks_wrapper.py.
"""

from needle.hayhooks_wrapper import SearchPipelineWrapper


class PipelineWrapper(SearchPipelineWrapper):
    pipeline_file = "{name}.yaml"
'''


def save_hayhooks_wrapper(generation: Path, name: str) -> None:
    """Write GENERATION/hayhooks/NAME/pipeline_wrapper.py: a Hayhooks pipeline that serves GENERATION/NAME.yaml.

    A wrapper rather than the YAML file itself, which Hayhooks 2.1 serves only with an allowlist set by hand, with
    its relative paths against the server's working directory, every declared input required (so no optional
    ``top_k``) and every error a 500. The wrapper names no path: the index can still be moved.
    """
    folder = generation / HAYHOOKS_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pipeline_wrapper.py").write_text(HAYHOOKS_WRAPPER.format(name=name), encoding="utf-8")


def as_hits(documents: list[Document]) -> list[Hit]:
    """The CLI's --json shape for one query: ``{"id", "score", "content"}`` per hit, best first."""
    return [{"id": d.id, "score": d.score, "content": d.content} for d in documents]
