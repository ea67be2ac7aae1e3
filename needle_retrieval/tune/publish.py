"""Install a fusion setting into an index: ``DIR/fusion.json`` and one new generation whose search pipelines carry
it, made of the live generation's parts, linked rather than built again.

`needle tune` (and ``--reset``) changes nothing but fusion.json and the search pipelines, so the new generation is
the live one with its ``<mode>_search.yaml`` files and their Hayhooks wrappers written afresh
(``save_search_pipelines``, which reads the fusion.json just written) and every other file hard-linked (copied
where links are impossible, ``link_or_copy``): the embeddings and their fingerprint, the FAISS store, the BM25
index. Nothing is encoded, tokenised or saved again. A link is safe because no part is written in place: stores
save new generations, the embedder replaces its file, and a saved FAISS store's documents are opened read-only.

Nothing unverified is carried over: each linked file's bytes are checked against the sha256 the live generation
(or the store inside it) records, since the new manifest vouches for them. One field names the generation: the
BM25 store records where its documents are, the dense part beside it (``document_store_path``), so that store's
manifest is written again, naming the new generation's dense part as a build would.

DIR's writer lock is held from the fusion file's change to the switch. A failure before the switch removes the new
generation (``Generations.write``) and puts the previous fusion.json back. A kill leaves the old generation live
and whole (nothing is written through a link), though fusion.json may already hold the new setting: `needle
search`, `needle eval` and `needle serve`, which read it, then use it, while the live generation's YAML files keep
the old one until tune runs again.
"""

import json
import os
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

from components.atomic_files import atomic_write, atomic_write_text, fsync_directory
from components.stores.crash_safe_generations import MANIFEST, POINTER, SEAL, STORES, load_json, seal_of, verify_all
from components.stores.file_digests import DigestProgress
from needle_retrieval.defaults import HAYHOOKS_DIR
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.checks import rebuild_hint
from needle_retrieval.index.generations import LAYOUT, link_or_copy, read_live, take_lock
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.templates import save_search_pipelines
from needle_retrieval.pipelines.fusion import Fusion, fusion_path, remove_fusion, write_fusion
from needle_retrieval.progress import Stages

PIPELINE = "_search.yaml"  # what the name of a generation's search pipeline ends with: <mode>_search.yaml
SHARED = "document_store_path"  # a store manifest's field naming the store its documents are read from


def install(index_dir: Path, fusion: Fusion | None) -> tuple[bool, str]:
    """Write FUSION to DIR/fusion.json (None: remove it) and publish the generation whose pipelines carry it;
    returns (whether DIR held a fusion file before, the new generation's name).

    :raises NeedleError: no index, one that is not a FAISS text index, or a part not as saved; the live generation
        and fusion.json are then as they were.
    """
    check_relinkable(IndexManifest.load(index_dir), index_dir)  # before the lock: never a LOCK in a stranger's dir
    path = fusion_path(index_dir)
    with take_lock(index_dir):
        previous = path.read_bytes() if path.is_file() else None
        try:
            if fusion is None:
                remove_fusion(index_dir)
            else:
                write_fusion(index_dir, fusion)
            generation = relink(index_dir)
        except BaseException:
            restore(path, previous)
            raise
    return previous is not None, generation


def check_relinkable(manifest: IndexManifest, index_dir: Path) -> None:
    """Refuse what a relink cannot carry: a Milvus collection belongs to its generation, an image index has no
    fusion. :raises NeedleError: naming the kind of index."""
    if manifest.store != "faiss" or manifest.multimodal:
        kind = "an image" if manifest.multimodal else f"a {manifest.store}"
        raise NeedleError(
            f"{index_dir} is {kind} index: `needle tune` installs a fusion into a FAISS + BM25 text index only"
        )


def restore(path: Path, previous: bytes | None) -> None:
    """Put back the fusion file PATH held before (None: it had none)."""
    if previous is None:
        path.unlink(missing_ok=True)
        fsync_directory(path.parent)
    else:
        atomic_write(path, lambda handle: handle.write(previous))


def relink(index_dir: Path) -> str:
    """Publish a new generation of INDEX_DIR: the live one's parts linked, its search pipelines written with the
    fusion DIR holds now; returns its name. The caller holds DIR's writer lock."""
    manifest = IndexManifest.load(index_dir)
    check_relinkable(manifest, index_dir)
    source, recorded = read_live(index_dir)
    linking, saving = Stages(desc="Linking (parts)", unit="bytes"), Stages(desc="Saving (generation)", unit="bytes")
    try:
        with linking as checks, saving as report:
            writer = Relink(index_dir, source, recorded, manifest, checks)
            return LAYOUT.write(index_dir, writer, on_progress=report).name
    except DocumentStoreError as error:
        raise NeedleError(f"cannot carry over the parts of {source}: {error}; {rebuild_hint(index_dir)}") from error
    except OSError as error:
        raise NeedleError(
            f"writing a new generation of {index_dir} failed, so the live index is unchanged: {error}"
        ) from error


@dataclass
class Relink:
    """The writer ``LAYOUT.write`` calls to fill the new generation from the live one (SOURCE, its manifest as
    recorded and as read)."""

    index_dir: Path
    source: Path
    recorded: dict[str, Any]
    manifest: IndexManifest
    on_progress: DigestProgress  # told the bytes checked of each part (``verify_all``)

    def __call__(self, partial: Path) -> dict[str, Any]:
        """Link the parts into PARTIAL, write its search pipelines; returns its manifest's fields."""
        final = self.index_dir.resolve() / partial.name.removesuffix(".partial")
        files = [name for name in self.recorded["files"] if not rewritten(name)]
        for name in files:
            (partial / name).parent.mkdir(parents=True, exist_ok=True)
            link_or_copy(self.source / name, partial / name)
        verify_all(partial, self.recorded, files, self.on_progress)
        for name, record in self.recorded.get(STORES, {}).items():
            self.link_store(self.source / name, partial / name, str(record["generation"]), final)
        manifest = replace(self.manifest, generation=final.name)
        save_search_pipelines(partial, manifest, pipeline_modes(self.recorded))
        return manifest.recorded()

    def link_store(self, source: Path, target: Path, generation: str, final: Path) -> None:
        """Link store SOURCE's live GENERATION into TARGET, its files checked; a manifest naming documents in
        another part of the live generation is written again naming that part of FINAL."""
        data = load_json(source / generation / MANIFEST)
        names = list(data["files"])
        (target / generation).mkdir(parents=True)
        link_or_copy(source / POINTER, target / POINTER)
        for name in names:
            (target / generation / name).parent.mkdir(parents=True, exist_ok=True)
            link_or_copy(source / generation / name, target / generation / name)
        verify_all(target / generation, data, names, self.on_progress)
        if data.get(SHARED) is None:
            link_or_copy(source / generation / MANIFEST, target / generation / MANIFEST)
        else:
            data[SHARED] = self.moved(source, str(data[SHARED]), target, final)
            data["generation_id"] = uuid.uuid4().hex  # another directory's generation, as every save gets its own
            data[SEAL] = seal_of(data)
            atomic_write_text(target / generation / MANIFEST, json.dumps(data, indent=1, ensure_ascii=False))
        fsync_directory(target / generation)
        fsync_directory(target)

    def moved(self, source: Path, shared: str, target: Path, final: Path) -> str:
        """SHARED (relative to store SOURCE) for store TARGET: the same part of FINAL as it named of the live
        generation, relative to TARGET as a build records it. :raises DocumentStoreError: it names something
        outside the live generation."""
        named = (source / shared).resolve()
        try:
            part = named.relative_to(self.source.resolve())
        except ValueError:
            raise DocumentStoreError(f"{source} reads its documents from {named}, outside {self.source}") from None
        return os.path.relpath(final / part, target.resolve())


def rewritten(name: str) -> bool:
    """Whether a file of the live generation is written afresh rather than linked: a search pipeline or its
    Hayhooks wrapper (``save_search_pipelines`` writes both)."""
    return ("/" not in name and name.endswith(PIPELINE)) or name.startswith(f"{HAYHOOKS_DIR}/")


def pipeline_modes(recorded: dict[str, Any]) -> list[str]:
    """The modes whose search pipeline the live generation holds, in its manifest's order."""
    return [name.removesuffix(PIPELINE) for name in recorded["files"] if "/" not in name and name.endswith(PIPELINE)]
