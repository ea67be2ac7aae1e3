"""Crash-safe saved generations of a store directory, shared by the FAISS and the BM25 document stores.

Layout of a store directory::

    <path>/CURRENT              one line: the name of the live generation, e.g. "gen-00000007"
    <path>/gen-00000007/        the store's own files, plus manifest.json

A save writes a complete new generation under a ``.partial`` name, fsyncs every file and the directory,
renames it to its final name, then switches ``CURRENT`` with ``os.replace`` (atomic on POSIX) and only then
removes older generations and leftovers of interrupted saves. A process killed at any point therefore leaves
either the previous generation or the new one as ``CURRENT``, never a half-written one. The manifest records
the size and the sha256 of every file it owns (``components.stores.file_digests``), a seal over its own fields
(``seal_of``), and for every store saved
inside it (a sub-directory with its own ``CURRENT``, as an index generation holds ``dense/`` and ``bm25/``) the
generation that store had and the sha256 of that generation's manifest, which in turn records the digests of
that store's files: one digest at the top covers every byte of the index. Reading a manifest checks what costs
nothing (sizes, that no file and no generation is a symbolic link, the stores' generations and manifests); the
files' bytes are checked when a store opens the generation, before it loads any (``verify_all``, ``verified``),
so damage or tampering is reported with the file's name instead of loading garbage. What goes into a
generation is the store's business: it passes a writer that fills the directory, and reads the files back
itself from the directory this module finds.
"""

import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack.document_stores.errors import DocumentStoreError

from components.atomic_files import publish, sync_file, temp_pattern, temp_sibling
from components.stores.directory_lock import LOCK_FILE
from components.stores.file_digests import (
    DIGESTS,
    SHA256,
    DigestProgress,
    check_relative,
    digest_files,
    read_regular,
    sha256_file,
    verified,
    verify_all,
)

__all__ = [
    "DIGESTS",
    "MANIFEST",
    "POINTER",
    "SEAL",
    "STORES",
    "Generations",
    "load_json",
    "seal_of",
    "verified",
    "verify_all",
]

POINTER = "CURRENT"
MANIFEST = "manifest.json"
STORES = "stores"  # manifest key: {sub-directory: {"generation", "manifest_sha256"}} of the stores saved inside
MANIFEST_LIMIT = 64 << 20  # bytes: far above any manifest a save writes (a few hundred bytes per file it lists)
SEAL = "seal"  # manifest key: the sha256 of the manifest's other fields (``seal_of``), so it is one tamper-evident unit
# Files in a store directory that are not part of a generation's content (_owned): the writer lock, the pointer's
# staged copy left by a save killed before its switch (the fixed CURRENT.tmp of earlier versions), and any file named
# as atomic_files.temp_sibling names one (the pointer's staged copy, a table a store builds in place).
_TEMP_SIBLING = temp_pattern("NAME").replace("NAME", ".+")
_UNOWNED = re.compile(rf"{re.escape(LOCK_FILE)}|{_TEMP_SIBLING}|{re.escape(POINTER)}\.tmp")


@dataclass(frozen=True)
class Generations:
    """
    The generation layout of one kind of store.

    :param kind: how errors name the store, e.g. "FAISS store" ("<path> is not a FAISS store directory").
    :param digits: width of the generation number in directory names; fixed per store by directories
        already saved (FAISS 8, BM25 6), so it must not change.
    :param stamp: manifest fields every generation is written with and must carry when read (a format tag).
    :param keep: older complete generations kept after a switch, so that a reader which read ``CURRENT``
        just before it changed can still open the generation it was pointed at (0: remove them at once).
    """

    kind: str
    digits: int
    stamp: dict[str, Any] = field(default_factory=dict)
    keep: int = 0

    def current(self, root: Path) -> Path | None:
        """
        The live generation directory of the store at ``root``.

        :returns: ``None`` when ``root`` holds no saved store yet (missing, empty, or only leftovers of a
            first save that never completed).
        :raises DocumentStoreError: naming the file, when ``root`` is not such a store or its pointer is damaged.
        """
        if not root.exists():
            return None
        if not root.is_dir():
            raise DocumentStoreError(f"{root}: the {self.kind} path exists but is not a directory")
        pointer = root / POINTER
        if pointer.is_symlink():
            raise DocumentStoreError(f"{pointer}: a symbolic link, not the {self.kind}'s own pointer file")
        if not pointer.is_file():
            self._check_pointerless(root)
            return None
        name = pointer.read_text(encoding="utf-8", errors="replace").strip()
        match = self._match(name)
        if match is None or match.group(2):
            raise DocumentStoreError(
                f"{pointer}: corrupted, expected a generation name like {self._name(1)!r}, got {name[:40]!r}"
            )
        live = root / name
        if live.is_symlink():
            raise DocumentStoreError(
                f"{live}: a symbolic link, not a generation directory of its own (it may be another index's)"
            )
        if not live.is_dir():
            raise DocumentStoreError(f"{live}: missing, although {pointer} names it as the live generation")
        return live

    def read_current(self, root: Path) -> tuple[Path, dict[str, Any]] | None:
        """The live generation of the store at ``root`` and its checked manifest, or ``None`` when none is saved."""
        generation = self.current(root)
        return None if generation is None else (generation, self.read_manifest(generation))

    def read_manifest(self, generation: Path) -> dict[str, Any]:
        """
        Read a generation's manifest and check what costs no reading of data: its stamp; that every file it lists
        is a regular file (no symbolic link on the way) of the recorded size, with a recorded sha256; and that every
        store saved inside it still has the generation and manifest it had when this one was written. The bytes
        of each file are checked when a store loads it (``verified``).

        :raises DocumentStoreError: one line naming the file at fault; a manifest without digests (written before
            they were recorded) is refused too, since accepting one would let anybody turn the check off by
            deleting them.
        """
        path = generation / MANIFEST
        if generation.is_symlink():
            raise DocumentStoreError(f"{generation}: a symbolic link, not a generation directory of its own")
        if not path.is_file() or path.is_symlink():
            raise DocumentStoreError(f"{path}: missing; the generation named by {POINTER} is incomplete")
        manifest = load_json(path, MANIFEST_LIMIT)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
            raise DocumentStoreError(f"{path}: corrupted, expected an object with a 'files' entry")
        for key, expected in self.stamp.items():
            if manifest.get(key) != expected:
                got = manifest.get(key)
                raise DocumentStoreError(f"{path}: {key} {got!r} is not supported (expected {expected!r})")
        _check_seal(path, manifest)
        _check_digest_record(path, manifest)
        for name, size in manifest["files"].items():
            _check_file(generation, path, name, size)
        _check_stores(generation, path, manifest.get(STORES, {}))
        return manifest

    def write(
        self, root: Path, writer: Callable[[Path], dict[str, Any]], on_progress: DigestProgress | None = None
    ) -> Path:
        """
        Write a new generation with ``writer`` and make it the live one, crash-safely (see the module docstring).

        A failure before the switch (the writer raising, a full disk) removes the partial generation and leaves
        the live one as it was. Each manifest gets a random ``generation_id``, so that a writer can tell its own
        generation from another one of the same name (a directory rebuilt and swapped in by someone else).

        :param writer: fills the directory it is given and returns the manifest fields to record.
        :param on_progress: called as ``on_progress("digesting", done, total)`` while the files the writer wrote
            are hashed for the manifest, ``done`` of ``total`` bytes (``file_digests.digest_files``): seconds for
            GBs of embeddings, which ``needle index`` shows as progress lines.
        :returns: the directory of the new live generation.
        """
        root.mkdir(parents=True, exist_ok=True)
        number = 1 + max((int(m.group(1)) for p in root.iterdir() if (m := self._match(p.name))), default=0)
        final = root / self._name(number)
        partial = root / f"{final.name}.partial"
        staged = temp_sibling(root / POINTER)
        try:
            partial.mkdir()
            self._fill(partial, writer, on_progress)
            os.rename(partial, final)
            _fsync(root)
            with staged.open("wb") as handle:
                handle.write(f"{final.name}\n".encode())
                sync_file(handle)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            shutil.rmtree(final, ignore_errors=True)
            staged.unlink(missing_ok=True)
            raise
        publish(staged, root / POINTER)  # the switch: atomic, and fsynced with its directory
        self.remove_stale(root, live=final.name)
        return final

    def _fill(
        self, partial: Path, writer: Callable[[Path], dict[str, Any]], on_progress: DigestProgress | None
    ) -> None:
        """Let ``writer`` fill ``partial``, then add the manifest (stamp, id, sizes and sha256 of the files it owns,
        hashed with ON_PROGRESS told, the stores inside it) and fsync everything."""
        manifest = {**self.stamp, **writer(partial), "generation_id": uuid.uuid4().hex}
        owned, directories = _owned(partial)
        manifest["files"] = {name: (partial / name).stat().st_size for name in owned}
        manifest[DIGESTS] = digest_files(partial, manifest["files"], on_progress)
        stores = {d.name: _store_record(d) for d in sorted(partial.iterdir()) if _is_store(d)}
        if stores:
            manifest[STORES] = stores
        manifest[SEAL] = seal_of(manifest)
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
        for entry in [*(partial / name for name in owned), partial / MANIFEST, *partial.iterdir(), *directories]:
            _fsync(entry)
        _fsync(partial)

    def remove_stale(self, root: Path, live: str) -> None:
        """Remove leftovers of interrupted saves and the complete generations older than the ``keep`` newest."""
        entries = [(m, p) for p in root.iterdir() if (m := self._match(p.name)) and p.name != live]
        complete = sorted((int(m.group(1)) for m, _ in entries if not m.group(2)), reverse=True)
        kept = {self._name(number) for number in complete[: self.keep]}
        for _, entry in entries:
            if entry.name not in kept:
                shutil.rmtree(entry, ignore_errors=True)

    def _check_pointerless(self, root: Path) -> None:
        """
        Accept a directory without ``CURRENT`` only when it holds nothing but leftovers of a first save.

        Anything else, a complete generation included, means the pointer was lost, and starting empty would
        overwrite data at the next save.
        """
        pointer = root / POINTER
        names = sorted(p.name for p in root.iterdir() if not _UNOWNED.fullmatch(p.name))
        strangers = [n for n in names if not self._match(n)]
        if strangers:
            raise DocumentStoreError(
                f"{pointer}: missing, so {root} is not a {self.kind} directory (it holds {strangers[:5]})"
            )
        complete = [n for n in names if not n.endswith(".partial")]
        if complete:
            raise DocumentStoreError(
                f"{pointer}: missing, although {root} holds saved generation(s) {complete[:5]}: write the name of the "
                f"one to use into {pointer}, or remove the directory"
            )

    def _name(self, number: int) -> str:
        return f"gen-{number:0{self.digits}d}"

    def _match(self, name: str) -> re.Match[str] | None:
        """Match a generation directory name (final or ``.partial``) of this layout's width."""
        return re.fullmatch(rf"gen-(\d{{{self.digits}}})(\.partial)?", name)


def _owned(directory: Path, prefix: str = "") -> tuple[list[str], list[Path]]:
    """The files a new generation owns (relative paths, sorted), and its sub-directories to fsync; a store saved
    inside it (``_is_store``) owns its own files and is recorded by ``_store_record`` instead. Lock files (a
    database's own too) and pointers being written change while the generation is live, so they are not its."""
    files: list[str] = []
    directories: list[Path] = []
    for entry in sorted(directory.iterdir()):
        name = f"{prefix}{entry.name}"
        if entry.is_symlink():
            raise DocumentStoreError(f"{entry}: a symbolic link in a generation being written; it holds files only")
        if entry.is_dir() and not _is_store(entry):
            inner, deeper = _owned(entry, f"{name}/")
            files, directories = files + inner, [*directories, entry, *deeper]
        elif entry.is_file() and name != MANIFEST and not _UNOWNED.fullmatch(entry.name):
            files.append(name)
    return files, directories


def _is_store(directory: Path) -> bool:
    """Whether DIRECTORY is a store saved in generations of its own (it has a ``CURRENT`` pointer)."""
    return directory.is_dir() and not directory.is_symlink() and (directory / POINTER).is_file()


def _store_record(store: Path) -> dict[str, str]:
    """What a generation records of a store saved inside it: its live generation and that one's manifest digest."""
    name = (store / POINTER).read_text(encoding="utf-8").strip()
    return {"generation": name, "manifest_sha256": sha256_file(store / name / MANIFEST)}


def seal_of(manifest: dict[str, Any]) -> str:
    """The sha256 of MANIFEST's fields but ``SEAL``, as canonical JSON (sorted keys, no spaces): what a generation
    records in ``SEAL``, so that a field changed by hand is noticed even where no digest of its own covers it (a
    model name, a backend setting). Whoever rewrites the manifest can recompute it: it makes a generation one
    tamper-evident unit, not an authenticated one."""
    fields = {key: value for key, value in manifest.items() if key != SEAL}
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _check_seal(path: Path, manifest: dict[str, Any]) -> None:
    """The manifest at PATH carries the seal of its own fields (``seal_of``); one without (written before seals
    were recorded) is refused, or deleting the seal would turn the check off."""
    seal = manifest.get(SEAL)
    if seal is None:
        raise DocumentStoreError(
            f"{path}: carries no seal of its fields (written by needle 0.2.0 or older), so a change to it cannot be "
            "noticed: build it again"
        )
    if seal != seal_of(manifest):
        raise DocumentStoreError(f"{path}: changed after it was written (its fields no longer match its seal)")


def _check_digest_record(path: Path, manifest: dict[str, Any]) -> None:
    """The manifest at PATH records one sha256 (64 lowercase hex digits) per listed file, and no other."""
    digests = manifest.get(DIGESTS)
    if digests is None:
        raise DocumentStoreError(
            f"{path}: records no sha256 of its files (written by a version that did not record them), so its "
            "bytes cannot be verified: build it again"
        )
    if (
        not isinstance(digests, dict)
        or set(digests) != set(manifest["files"])
        or not all(isinstance(d, str) and SHA256.fullmatch(d) for d in digests.values())
    ):
        raise DocumentStoreError(f"{path}: corrupted, its {DIGESTS!r} entry must give one digest per listed file")


def _check_file(generation: Path, manifest: Path, name: Any, size: Any) -> None:
    """GENERATION/NAME is a regular file of SIZE bytes, reached without a symbolic link."""
    file = generation / check_relative(name, manifest)
    for part in [*reversed(file.relative_to(generation).parents[:-1]), Path(name)]:
        if (generation / part).is_symlink():
            raise DocumentStoreError(f"{generation / part}: a symbolic link, where {manifest} lists a file of its own")
    if not file.is_file():
        raise DocumentStoreError(f"{file}: missing (listed in {manifest})")
    if isinstance(size, bool) or not isinstance(size, int):
        raise DocumentStoreError(f"{manifest}: corrupted, the size of {name} must be a count, got {size!r}")
    if file.stat().st_size != size:
        raise DocumentStoreError(f"{file}: corrupted, {file.stat().st_size} bytes where {manifest} records {size}")


def _check_stores(generation: Path, manifest: Path, stores: Any) -> None:
    """Every store recorded in the manifest still has the generation and the manifest it had when it was written."""
    if not isinstance(stores, dict):
        raise DocumentStoreError(f"{manifest}: corrupted, its {STORES!r} entry must be an object")
    for name, record in stores.items():
        store = generation / check_relative(name, manifest)
        if not isinstance(record, dict) or not isinstance(record.get("generation"), str):
            raise DocumentStoreError(f"{manifest}: corrupted, {STORES}.{name} must name a generation")
        if store.is_symlink() or (store / POINTER).is_symlink():
            raise DocumentStoreError(f"{store}: a symbolic link, where {manifest} records a store of its own")
        if not (store / POINTER).is_file():
            raise DocumentStoreError(f"{store}: missing, or not a store any more (listed in {manifest})")
        live = (store / POINTER).read_text(encoding="utf-8", errors="replace").strip()
        if "/" in live or live in ("", ".", ".."):
            raise DocumentStoreError(f"{store / POINTER}: corrupted, expected a generation name, got {live[:40]!r}")
        if live != record["generation"]:
            raise DocumentStoreError(
                f"{store / POINTER}: names {live[:40]!r}, but {manifest} records {record['generation']!r}: the store "
                "was changed after this generation was written"
            )
        if (store / live).is_symlink():
            raise DocumentStoreError(f"{store / live}: a symbolic link, not a generation directory of its own")
        inner = store / live / MANIFEST
        if not inner.is_file() or inner.is_symlink() or sha256_file(inner) != record.get("manifest_sha256"):
            raise DocumentStoreError(f"{inner}: missing or changed since {manifest} was written (sha256 differs)")


def load_json(path: Path, limit: int | None = None) -> Any:
    """Parse a JSON file, or raise DocumentStoreError naming it: missing, larger than LIMIT bytes (None: any size),
    not UTF-8 JSON, or nested too deeply to parse (a planted ``[[[[...]]]]`` would overflow the stack)."""
    if not path.is_file():
        raise DocumentStoreError(f"{path}: missing")
    try:
        text = (path.read_bytes() if limit is None else read_regular(path, limit)).decode("utf-8")
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, or an integer past Python's 4,300 digits
        raise DocumentStoreError(f"{path}: corrupted JSON ({str(exc)[:200]})") from None
    except RecursionError:
        raise DocumentStoreError(f"{path}: corrupted JSON (nested too deeply to be a file of ours)") from None


def _fsync(path: Path) -> None:
    """Flush a file's or a directory's data and metadata to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
