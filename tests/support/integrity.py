"""Test helpers for tampering with saved generations the way someone with write access to the files would: every
digest and the manifest's seal recomputed, so what is left to refuse the change is the reader's own checks."""

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.stores.crash_safe_generations import SEAL, seal_of


def live(path: Path) -> Path:
    """The live generation directory of a store or index directory (what CURRENT names)."""
    return path / (path / "CURRENT").read_text().strip()


def write_sealed(manifest_file: Path, manifest: Any) -> None:
    """Write MANIFEST (any JSON value) to MANIFEST_FILE, sealed as a build seals it when it is an object."""
    if isinstance(manifest, dict):
        manifest = {**manifest, SEAL: seal_of(manifest)}
    manifest_file.write_text(json.dumps(manifest))


def edit_manifest(manifest_file: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    """Apply CHANGE to the parsed manifest (in place, or returning a replacement) and write it back sealed."""
    manifest = json.loads(manifest_file.read_text())
    replaced = change(manifest)
    write_sealed(manifest_file, manifest if replaced is None else replaced)


def reseal(file: Path, generation: Path | None = None) -> None:
    """Record FILE's new size and sha256 in its generation's manifest and seal it again, as a tamperer rewriting
    both would: the digest check then passes, and what is left to refuse the file is the store's own shape and
    range checks. GENERATION: the directory whose manifest records FILE, when FILE lies deeper in it (default: its
    folder)."""
    generation = file.parent if generation is None else generation
    name = str(file.relative_to(generation))

    def record(manifest: dict[str, Any]) -> None:
        manifest["files"][name] = file.stat().st_size
        manifest["sha256"][name] = hashlib.sha256(file.read_bytes()).hexdigest()

    edit_manifest(generation / "manifest.json", record)
