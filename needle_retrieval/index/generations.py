"""The generations of an index directory: which one is live, who may write one, and what a rebuild may clean up.

Layout of ``needle index CORPUS --out DIR``::

    DIR/LOCK                 the writer lock (``needle index`` holds it for the whole build; readers never take it)
    DIR/CURRENT              one line: the live generation, e.g. "gen-000003"
    DIR/gen-000003/          the live index: manifest.json, embeddings.npy (+ .json), dense/, bm25/, *_search.yaml
    DIR/gen-000002/          the previous index, kept until the next switch for readers that opened it just before

A rebuild writes a whole new generation as ``gen-NNNNNN.partial``, fsyncs it, renames it and switches ``CURRENT``
atomically (``components.stores.crash_safe_generations``), so a crash at any point leaves the old index live.
Nothing inside a generation names an absolute path: the directory can be moved, copied or archived.

Every generation's manifest records the size and sha256 of each file it owns, and the generation and manifest
digest of each store inside it (``dense/``, ``bm25/``), whose manifests record their own files' digests
(``components.stores.crash_safe_generations``). ``read_live`` checks the sizes, that nothing is a symbolic link,
the stores' generations and manifest digests, and the bytes of the generation's own small files; each store
verifies all its files when it opens its generation, and the embedding file is verified before it is reused.
Any mismatch is one line naming the file (``NeedleError``). A manifest without digests (an index built before
they were recorded) is refused with a rebuild hint: accepting one would let anybody turn verification off by
deleting the record.
"""

import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

from components.atomic_files import temp_pattern
from components.stores.crash_safe_generations import (
    DIGESTS,
    MANIFEST,
    POINTER,
    Generations,
    load_json,
    verify_all,
)
from components.stores.directory_lock import LOCK_FILE, DirectoryLock
from components.stores.file_digests import DigestProgress
from needle_retrieval.errors import NeedleError as NeedleError  # the class every module names from here
from needle_retrieval.index.checks import check_readable as _check_readable
from needle_retrieval.index.checks import rebuild_hint
from needle_retrieval.pipelines.fusion import FUSION_FILE

logger = logging.getLogger(__name__)

FORMAT = "needle-index"
LAYOUT = Generations(kind="needle index", digits=6, stamp={"format": FORMAT, "format_version": 1}, keep=1)
EMBEDDINGS = "embeddings.npy"
# What an index directory holds beside its generations: the pointer, the writer lock and `needle tune`'s fusion file,
# and the temporary file of an interrupted write of the pointer or the fusion file (today's names in _OURS; the
# fixed names CURRENT.tmp and fusion.json.tmp that earlier versions used, which a rebuild must still accept).
TOP_LEVEL = (POINTER, LOCK_FILE, FUSION_FILE, f"{POINTER}.tmp", f"{FUSION_FILE}.tmp")
GENERATION = re.compile(r"gen-\d{6}(\.partial)?")  # LAYOUT's generation names, final or partial
_OURS = re.compile(rf"{GENERATION.pattern}|{temp_pattern(FUSION_FILE)}|{temp_pattern(POINTER)}")


def live_name(index_dir: Path) -> str | None:
    """The generation name ``CURRENT`` holds now (unchecked), or None when there is no pointer."""
    try:
        return (index_dir / POINTER).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def read_live(index_dir: Path) -> tuple[Path, dict[str, Any]]:
    """
    The live generation of an index and its checked manifest fields, for a reader; the bytes of the generation's
    own small files are verified too (``verify_own_files``).

    A generation removed between reading ``CURRENT`` and opening it (two rebuilds in between) is retried once
    from the pointer. :raises NeedleError: one line saying what is missing or broken and how to rebuild.
    """
    _check_readable(index_dir)
    for attempt in (1, 2):
        name = live_name(index_dir)
        try:
            found = LAYOUT.read_current(index_dir)
            if found is not None:
                verify_own_files(*found)
        except DocumentStoreError as error:
            if attempt == 1 and live_name(index_dir) != name:
                continue
            raise NeedleError(f"broken index {index_dir}: {error}; {rebuild_hint(index_dir)}") from error
        if found is not None:
            return found
    raise NeedleError(f"{index_dir} is not a needle index: {index_dir / POINTER} is missing; {rebuild_hint(index_dir)}")


def verify_own_files(generation: Path, manifest: dict[str, Any]) -> None:
    """Verify the bytes of GENERATION's own small files (pipelines, Hayhooks wrappers, the embeddings' fingerprint, a
    Milvus Lite database) against its manifest. The embedding file, large and read only by rebuilds, is verified
    before it is reused (``verified_embeddings``); each store verifies its own files when it opens them.

    :raises DocumentStoreError: naming the first file that is not as saved.
    """
    verify_all(generation, manifest, [name for name in manifest.get(DIGESTS, {}) if name != EMBEDDINGS])


def check_target(out: Path) -> None:
    """
    Refuse an ``--out`` that ``needle index`` must not write into: a file, or a directory that is neither empty
    nor a needle index (any name but ``TOP_LEVEL``'s and generations' is a stranger's, a stray ``needle.json``
    too). Reads only, so a stranger's directory is never touched.
    """
    if not out.exists():
        return
    if not out.is_dir():
        raise NeedleError(f"--out {out} is a file, not a directory: give a new or empty directory, or an index")
    names = sorted(entry.name for entry in out.iterdir())
    strangers = [n for n in names if not (n in TOP_LEVEL or _OURS.fullmatch(n))]
    if strangers:
        raise NeedleError(
            f"--out {out} is not empty and not a needle index (it holds {', '.join(strangers[:5])}); "
            "refusing to write into it: choose a new or empty directory"
        )
    stamp = _live_format(out)
    if stamp not in (None, FORMAT):
        raise NeedleError(f"--out {out} holds a {stamp!r} directory, not a needle index: choose another directory")


def _live_format(out: Path) -> Any:
    """The ``format`` recorded by the live generation's manifest, or None when there is none to read."""
    name = live_name(out)
    if not name or not GENERATION.fullmatch(name):
        return None
    try:
        manifest = load_json(out / name / MANIFEST)
    except DocumentStoreError:
        return None  # a damaged index of ours: a rebuild repairs it
    return manifest.get("format") if isinstance(manifest, dict) else None


def take_lock(out: Path) -> DirectoryLock:
    """
    Take the writer lock of ``out`` (creating the directory), or fail at once.

    :raises DirectoryLockedError: another writer holds it (the message names its pid and command).
    :raises NeedleError: the location cannot be written (read-only, no permission, a file on the way).
    """
    lock = DirectoryLock(out, purpose="needle index")
    try:
        lock.acquire()
    except OSError as error:
        raise NeedleError(f"cannot write the index directory {out}: {error.strerror or error}") from error
    return lock


def previous_embeddings(out: Path, on_progress: DigestProgress | None = None) -> Path | None:
    """The embedding file of the live generation being replaced, if its bytes are those it was saved with.

    None when there is none to reuse, and also for a changed file: that one is encoded again (nothing unverified
    is taken from an index, ``verified_embeddings``).

    :param on_progress: told the ``checking files`` stage, in bytes, as the file is hashed (seconds for GBs).
    """
    try:
        found = LAYOUT.read_current(out) if (out / POINTER).is_file() else None
    except DocumentStoreError:
        return None
    return None if found is None else verified_embeddings(*found, on_progress)


def embeddings_file(index_dir: Path) -> Path | None:
    """The live generation's embedding file, or None (no index, no dense part, or not the bytes it was saved with)."""
    try:
        generation, manifest = read_live(index_dir)
    except NeedleError:
        return None
    return verified_embeddings(generation, manifest)


def verified_embeddings(
    generation: Path, manifest: dict[str, Any], on_progress: DigestProgress | None = None
) -> Path | None:
    """GENERATION's embedding file once it and its fingerprint have the sha256 the manifest records, else None
    (a warning says why when the file is there but changed); the bytes hashed are told to ON_PROGRESS
    (``verify_all``)."""
    path, sidecar = generation / EMBEDDINGS, f"{EMBEDDINGS}.json"
    if not path.is_file():
        return None
    names = [EMBEDDINGS, *([sidecar] if (generation / sidecar).exists() else [])]
    try:
        verify_all(generation, manifest, names, on_progress)
    except DocumentStoreError as error:
        logger.warning("not reusing the embeddings of %s: %s", generation, error)
        return None
    return path


def link_or_copy(source: Path, target: Path) -> None:
    """Give ``target`` the content of ``source``: a hard link (no copy), or a copy where links are not possible.

    A link is safe because the embedder never writes into an existing file: it replaces it (tmp + os.replace).
    """
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
