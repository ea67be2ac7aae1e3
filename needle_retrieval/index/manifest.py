"""An index directory as the CLI builds it: generations, each holding a manifest plus one part per retrieval mode.

Layout of one generation (see ``needle_retrieval.index.generations`` for the directory around it)::

    DIR/gen-NNNNNN/manifest.json        model, dimension, corpus file name, document count, modes, the size and
                                        sha256 of every file, the generation and manifest sha256 of dense/ and
                                        bm25/ (``needle_retrieval.index.generations`` says when each is checked)
    DIR/gen-NNNNNN/embeddings.npy       corpus embeddings, row i = corpus line i (+ its fingerprint .json)
    DIR/gen-NNNNNN/dense/               FAISS document store (vectors + documents)
    DIR/gen-NNNNNN/bm25/                BM25 index (when built with --bm25; reads documents from dense/)
    DIR/gen-NNNNNN/sparse/              learned sparse (SPLADE-style) index of --sparse MODEL (reads documents
                                        from dense/ when there is one: ``components.stores.sparse``)
    DIR/gen-NNNNNN/milvus.db/           instead of dense/ and bm25/ with --store milvus: a Milvus Lite database
                                        (or, with --uri, a collection on a server: see
                                        ``needle_retrieval.index.milvus``)
    DIR/gen-NNNNNN/<mode>_search.yaml   the search pipelines, with paths relative to DIR: they load with DIR as
                                        the working directory
    DIR/gen-NNNNNN/hayhooks/<mode>_search/pipeline_wrapper.py
                                        one Hayhooks pipeline per search pipeline, serving its YAML file from any
                                        working directory: `hayhooks run --pipelines-dir DIR/gen-NNNNNN/hayhooks`
                                        (see ``needle_retrieval.serve.hayhooks``)

"""

import hashlib
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

from components.stores.bm25.languages import LANGUAGES
from components.stores.crash_safe_generations import MANIFEST
from components.stores.crash_safe_generations import STORES as SAVED_STORES
from components.stores.file_digests import DIGESTS
from components.stores.tenant_fields import tenant_field_problem
from needle_retrieval.defaults import HAYHOOKS_DIR, STORES
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import rebuild_hint
from needle_retrieval.index.dense_type import DenseIndexType
from needle_retrieval.index.generations import LAYOUT, read_live, verify_own_files
from needle_retrieval.index.milvus_place import check_recorded
from needle_retrieval.index.options import check_store_settings
from needle_retrieval.pipelines.embedders import spec_of
from needle_retrieval.ultrarag.embedder_spec import manifest_record

PARTS = ("dense", "bm25", "sparse")
# The search pipeline of each mode over a Milvus collection: hybrid is the same MixRetrieveRanker fusion as over
# FAISS + bm25s, rrf is Milvus's own hybrid search (its RRF ranker).
MILVUS_TEMPLATES = {"dense": "milvus_dense", "bm25": "milvus_bm25", "hybrid": "milvus_mix", "rrf": "milvus_hybrid"}
# An image index's search pipelines (needle_retrieval.index.images): image_search.yaml, image_batch_search.yaml.
IMAGE_TEMPLATE = "image"
SHA256 = re.compile(r"[0-9a-f]{64}")
# How the Hayhooks wrappers of generations built before 0.2.0 import their base class (``needle.serve.hayhooks`` or,
# older still, ``needle.hayhooks_wrapper``).
OLD_PACKAGE_IMPORT = re.compile(r"^from needle\.", re.MULTILINE)


def check_package_name(generation: Path, recorded: dict[str, Any]) -> None:
    """Refuse a generation built before the package was renamed: its Hayhooks wrappers (whose bytes the manifest
    records, so they cannot be rewritten) import ``needle``, a name this package no longer has.

    The wrappers were verified against the manifest by ``read_live`` just before: regular files of known bytes.
    """
    for name in recorded.get(DIGESTS, {}):
        if name.startswith(f"{HAYHOOKS_DIR}/") and OLD_PACKAGE_IMPORT.search((generation / name).read_text("utf-8")):
            raise NeedleError(
                f"{generation} was built by needle before 0.2.0: its Hayhooks wrapper {name} imports the package "
                f"`needle`, renamed `needle_retrieval`; {rebuild_hint(generation.parent)}"
            )


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (a corpus of any size in constant memory); a manifest
    records it so a later run can tell the same corpus content from an edited file of the same name and size."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


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
    multimodal: bool = (
        False  # images embedded by a CLIP-style model (needle_retrieval.index.images); recorded when true
    )
    embedder: dict[str, Any] | None = (
        None  # the backend (needle_retrieval.pipelines.embedders); None: sentence-transformers `model`
    )
    dense_index: dict[str, Any] | None = None  # FAISS index type (needle_retrieval.index.dense_type); None: flat
    corpus_sha256: str | None = None  # sha256 of the corpus file's bytes (file_sha256); None in older manifests
    store_settings: dict[str, Any] | None = (
        None  # the dense store's own settings (needle_retrieval.index.options); None: none
    )
    sparse_model: str | None = None  # the SparseEncoder of the sparse part (`needle index --sparse MODEL`); None: none
    tenant_field: str | None = None  # the meta field of the tenants (`needle index --tenant-field`); None: none
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
        unused |= {"tenant_field"} if self.tenant_field is None else set()
        unused |= {"sparse_model"} if self.sparse_model is None else set()
        kept = {k: v for k, v in asdict(self).items() if k not in unused}
        if self.embedder is not None:  # the build's own record may name the user's Infinity venv: never kept
            kept["embedder"] = manifest_record(self.embedder)
        return kept

    @classmethod
    def load(cls, index_dir: Path) -> "IndexManifest":
        """Read the manifest of DIR's live generation, or explain in one line what is missing or broken."""
        return cls.from_record(*read_live(Path(index_dir)))

    @classmethod
    def of_generation(cls, generation: Path) -> "IndexManifest":
        """Read the manifest of GENERATION (live or not: `hayhooks run` serves the one it was pointed at), its own
        small files verified as ``read_live`` verifies the live one's.

        :raises NeedleError: one line naming the file that is missing, changed or not as a build writes it.
        """
        try:
            recorded = LAYOUT.read_manifest(generation)
            verify_own_files(generation, recorded)
        except DocumentStoreError as error:
            raise NeedleError(f"broken index {generation.parent}: {error}; {rebuild_hint(generation.parent)}") from None
        return cls.from_record(generation, recorded)

    @classmethod
    def from_record(cls, generation: Path, recorded: dict[str, Any]) -> "IndexManifest":
        """The manifest GENERATION records (RECORDED, its digests already checked), each field checked."""
        names = {f.name for f in fields(cls)} - {"generation"}
        try:
            manifest = cls(**{k: v for k, v in recorded.items() if k in names}, generation=generation.name)
        except TypeError as e:
            raise NeedleError(f"corrupted index manifest in {generation}: {e}") from e
        manifest.check(generation)
        manifest.check_parts(generation, recorded.get(SAVED_STORES, {}))
        check_package_name(generation, recorded)
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
        if "dense" in self.modes and not (
            isinstance(self.model, str) and self.model.strip() and isinstance(self.dim, int) and self.dim > 0
        ):
            raise NeedleError(
                f"{where}: a dense part needs a model name and a dimension, got {self.model!r:.80}, {self.dim!r:.40}"
            )
        sparse_problem = self._sparse_problem()
        if sparse_problem is not None:
            raise NeedleError(f"{where}: {sparse_problem}")
        if self.corpus_sha256 is not None and not (
            isinstance(self.corpus_sha256, str) and SHA256.fullmatch(self.corpus_sha256)
        ):
            raise NeedleError(f"{where}: corpus_sha256 must be 64 lowercase hex digits, got {self.corpus_sha256!r}")
        if self.store not in STORES:
            raise NeedleError(f"{where}: store must be one of {', '.join(STORES)}, got {self.store!r}")
        if self.bm25_lang is not None and self.bm25_lang not in LANGUAGES:
            raise NeedleError(f"{where}: bm25_lang must be one of {', '.join(LANGUAGES)}, got {self.bm25_lang!r:.80}")
        if self.tenant_field is not None and (problem := tenant_field_problem(self.tenant_field)) is not None:
            raise NeedleError(f"{where}: tenant_field: {problem}")
        if self.tenant_field is not None and self.store != "faiss":
            raise NeedleError(f"{where}: tenant_field is for a FAISS index (Milvus records its partition key)")
        settings_problem = check_store_settings(self.store, self.store_settings)
        if settings_problem is not None:
            raise NeedleError(f"{where}: {settings_problem}")
        if self.store == "milvus":
            problem = check_recorded(self.uri, self.collection)
            if problem is None and "dense" not in self.modes:
                problem = f"a Milvus index has a dense part, got modes {self.modes!r}"
            if problem is not None:
                raise NeedleError(f"{where}: {problem}")
        image_problem = self._image_problem()
        if image_problem is not None:
            raise NeedleError(f"{where}: {image_problem}")
        try:
            spec_of(self.embedder)
            DenseIndexType.from_recorded(self.dense_index)
        except NeedleError as error:
            raise NeedleError(f"{where}: {error}") from None

    def _sparse_problem(self) -> str | None:
        """What is wrong with the learned sparse part's record (its model, its store), or None."""
        recorded: object = self.sparse_model  # as read from the file: any JSON value
        if "sparse" not in self.modes:
            return None if recorded is None else f"sparse_model {recorded!r:.80} without a sparse part"
        if not isinstance(recorded, str) or not recorded.strip():
            return f"a sparse part needs the name of its model, got {recorded!r:.80}"
        if self.store != "faiss":
            return f"a sparse part lives beside FAISS and BM25 parts, not in {self.store}"
        return None

    def _image_problem(self) -> str | None:
        """What is wrong with the ``multimodal`` field and the parts beside it, or None."""
        recorded: object = self.multimodal  # as read from the file: any JSON value
        if not isinstance(recorded, bool):
            return f"multimodal must be true or false, got {recorded!r}"
        if self.multimodal and (self.modes != ["dense"] or self.store != "faiss"):
            return f"a multimodal index has a dense FAISS part only, got modes {self.modes!r} in {self.store}"
        return None

    @property
    def fused_side(self) -> str | None:
        """The part fused with the dense one in hybrid and rrf mode: the learned sparse part when the index has one
        (``needle index --sparse``), else BM25; None when the index has no dense part or neither."""
        if "dense" not in self.modes:
            return None
        return "sparse" if "sparse" in self.modes else "bm25" if "bm25" in self.modes else None

    def template(self, mode: str, batch: bool = False) -> str:
        """The pipelines/ template that searches this index in MODE (its batch variant with ``batch``)."""
        name = MILVUS_TEMPLATES[mode] if self.store == "milvus" else mode
        if self.multimodal:
            name = IMAGE_TEMPLATE
        return f"{name}_batch" if batch else name
