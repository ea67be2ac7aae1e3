"""Open the index ``needle eval`` searches: the live generation as it is when it fits, else a fresh build.

``needle eval --mode`` builds (or reuses) an index directory of the dataset's corpus with ``needle index``
and searches it with the same pipelines as ``needle search``.

An index fits when its manifest records the same corpus content (``corpus_sha256``, the sha256 of the corpus
file's bytes, so an edited file of the same name and size does not fit), the same store, the parts the mode
searches and no learned sparse part (``needle index --sparse``: eval builds none, and where there is one hybrid
and rrf fuse dense with it, not with BM25), and, when the mode embeds queries, the same model with the
sentence-transformers backend and a flat FAISS index, and the BM25 language, that ``needle eval`` builds with.
Manifests written before the hash was recorded never fit.

A fitting index is still opened before it is trusted: the searcher loads every part and checks its document
count, and the index it opened is checked again (another process may have switched the index meanwhile).
When it cannot be opened it is rebuilt, exactly as an index that does not fit.

Runs on one index directory at once (two ``needle eval`` of the same data set) take turns rather than fail:
one that would build while another process holds the directory's writer lock says on stderr whom it waits
for, waits until the lock is free, and then looks again, so it searches what the other run built when that
fits (``index_reused`` true), and builds only when it does not.

`needle tune` makes the same check of the manifest before it fetches its candidates (``prepare_index``), and
searches a fitting index as it is too. It does not open it first: its own searchers open every part right after,
and opening it whole once more would load the model and both stores an extra time (a second on SciFact, more on a
large index); a part that does not open is then an error naming it, not a rebuild.
"""

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from haystack.document_stores.errors import DocumentStoreError

from components.stores.directory_lock import DirectoryLockedError, wait_until_unlocked
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.build import StoreChoice, build_index
from needle_retrieval.index.generations import embeddings_file
from needle_retrieval.index.manifest import IndexManifest, file_sha256
from needle_retrieval.pipelines.fusion import FusionSetting
from needle_retrieval.search.searcher import Searcher

logger = logging.getLogger(__name__)
T = TypeVar("T")
EVAL_LANG = "en"  # the BM25 language needle eval builds with (build_index's default)


@dataclass
class OpenedIndex:
    """The searcher of one evaluation and how its index came to be."""

    searcher: Searcher
    reused: bool  # the live generation was searched as it was: nothing built
    build_seconds: float | None  # None when reused
    embedding_cache_hit: bool | None  # reused: True when the mode embeds (nothing encoded), else None
    model_load_seconds: float  # opening the search pipeline: stores, models, warm_up, dimension probe


def parts_needed(mode: str, store: str) -> set[str]:
    """The index parts MODE searches (a Milvus index always has its dense part)."""
    parts = {"dense", "bm25"} if mode in ("hybrid", "rrf") else {mode}
    return parts | ({"dense"} if store == "milvus" else set())


def fits(manifest: IndexManifest, digest: str, mode: str, model: str, store: str) -> bool:
    """Whether MANIFEST's generation answers MODE over the corpus whose sha256 is DIGEST, as a fresh build would."""
    parts = parts_needed(mode, store)
    embeds = mode != "bm25"
    return (
        manifest.corpus_sha256 == digest
        and manifest.store == store
        and not manifest.multimodal
        and parts <= set(manifest.modes)
        and "sparse" not in manifest.modes
        and (not embeds or (manifest.model == model and manifest.embedder is None and manifest.dense_index is None))
        and ("bm25" not in parts or manifest.bm25_lang == EVAL_LANG)
    )


def live_manifest(index_dir: Path) -> IndexManifest | None:
    """The manifest of the live generation, or None when there is no readable one."""
    try:
        return IndexManifest.load(index_dir)
    except NeedleError:
        return None


def open_searcher(index_dir: Path, mode: str, top_k: int, fusion: FusionSetting | None) -> tuple[Searcher, float]:
    """Open a searcher of the live generation with FUSION (None: the index's own); returns it and the seconds it
    took."""
    start = time.perf_counter()
    searcher = Searcher(index_dir, mode=mode, top_k=top_k, fusion=fusion)
    return searcher, time.perf_counter() - start


def reuse(
    index_dir: Path, digest: str, mode: str, model: str, store: str, top_k: int, fusion: FusionSetting | None
) -> OpenedIndex | None:
    """A searcher of the live generation when it fits and opens whole, else None (it will be rebuilt)."""
    manifest = live_manifest(index_dir)
    if manifest is None or not fits(manifest, digest, mode, model, store):
        return None
    try:
        searcher, took = open_searcher(index_dir, mode, top_k, fusion)
    except (NeedleError, DocumentStoreError, OSError) as error:
        logger.warning("the index %s cannot be opened (%s); building it again", index_dir, error)
        return None
    if not fits(searcher.manifest, digest, mode, model, store):  # switched by another process meanwhile
        searcher.close()
        return None
    hit = True if mode != "bm25" or store != "faiss" else None
    return OpenedIndex(searcher, True, None, hit, took)


def open_for_eval(
    corpus: Path,
    index_dir: Path,
    mode: str,
    model: str,
    top_k: int,
    store: str = "faiss",
    seed: Path | None = None,
    fusion: FusionSetting | None = None,
) -> OpenedIndex:
    """Search the live generation of INDEX_DIR when it fits CORPUS and MODE and opens whole, else build a new
    one (``index_for_eval``) and search that, with FUSION (None: the index's own); the caller closes the returned
    searcher. Another writer of INDEX_DIR is waited for, then its index looked at again (``settle``).
    """
    digest = file_sha256(corpus)

    def build() -> OpenedIndex:
        build_seconds, hit = index_for_eval(corpus, index_dir, mode, model, store, seed)
        searcher, took = open_searcher(index_dir, mode, top_k, fusion)
        return OpenedIndex(searcher, False, build_seconds, hit, took)

    return settle(index_dir, lambda: reuse(index_dir, digest, mode, model, store, top_k, fusion), build)


def prepare_index(corpus: Path, index_dir: Path, mode: str, model: str) -> tuple[bool, float | None]:
    """Make the live FAISS generation of INDEX_DIR fit CORPUS and MODE for a caller that opens its own searchers
    (`needle tune`): (True, None) when it fits as it is, nothing built, else (False, the seconds ``index_for_eval``
    took to build one). Another writer is waited for, as in ``open_for_eval``."""
    digest = file_sha256(corpus)

    def look() -> tuple[bool, float | None] | None:
        manifest = live_manifest(index_dir)
        return (True, None) if manifest is not None and fits(manifest, digest, mode, model, "faiss") else None

    return settle(index_dir, look, lambda: (False, index_for_eval(corpus, index_dir, mode, model)[0]))


def settle(index_dir: Path, look: Callable[[], T | None], build: Callable[[], T]) -> T:
    """What LOOK finds in INDEX_DIR as it is, else what BUILD makes of it. Another writer of INDEX_DIR (another
    ``needle eval`` building it) is waited for, then LOOK asked again, rather than an error: also when it took
    the lock between the look and the build."""
    while True:
        found = look()
        if found is not None:
            return found
        if wait_for_writer(index_dir):
            continue  # another run was writing: what it wrote may fit
        try:
            return build()
        except DirectoryLockedError as locked:  # it started between the look and the build: wait on the next round
            if locked.directory.resolve() != index_dir.resolve():
                raise  # a lock of something else (a store directory elsewhere): waiting here would not free it


def wait_for_writer(index_dir: Path) -> bool:
    """Wait while another process holds INDEX_DIR's writer lock, saying so on stderr (one line per holder).

    Returns whether it waited. The wait has no limit: the holder is building, and the kernel frees its lock
    when it exits however it exits.
    """

    def notice(holder: str) -> None:
        print(f"needle eval: waiting for {holder} to finish writing {index_dir}", file=sys.stderr, flush=True)

    return wait_until_unlocked(index_dir, notice)


def index_for_eval(
    corpus: Path, index_dir: Path, mode: str, model: str, store: str = "faiss", seed: Path | None = None
) -> tuple[float, bool | None]:
    """Build or refresh the index for MODE; returns (build seconds, whether the embedding cache was hit).

    The cache was hit when the new generation's embedding file is the previous one (or ``seed``), carried over
    unchanged. A Milvus index always has its dense part: its BM25 and hybrid modes run over the one collection.
    A BM25 run keeps the dense part of an index that has one (its embeddings are carried over, not encoded), and
    a dense run its BM25 part, so that the next run of another mode still finds them (and reuses the index).
    """
    before = embedding_stamp(index_dir) or (file_stamp(seed) if seed is not None else None)
    manifest = live_manifest(index_dir)
    kept = embedding_stamp(index_dir) is not None and manifest is not None and manifest.model == model
    kept_bm25 = manifest is not None and manifest.store == store and "bm25" in manifest.modes
    start = time.perf_counter()
    build_index(
        corpus,
        index_dir,
        model=model,
        overwrite=False,
        dense=mode != "bm25" or store == "milvus" or kept,
        bm25=mode != "dense" or kept_bm25,
        lang=EVAL_LANG,
        target=StoreChoice(store),
        seed=seed,
    )
    took = time.perf_counter() - start
    if mode == "bm25" and store == "faiss":
        return took, None
    return took, before is not None and before == embedding_stamp(index_dir)


def embedding_stamp(index_dir: Path) -> tuple[int, int] | None:
    """Size and modification time of the live generation's embedding file, or None when it has none."""
    npy = embeddings_file(index_dir)
    return None if npy is None else file_stamp(npy)


def file_stamp(path: Path) -> tuple[int, int]:
    """Size and modification time of a file (a hard link carried into a new generation keeps both)."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns
