"""Test helpers for tampering with saved generations the way someone with write access to the files would."""

import hashlib
import json
from pathlib import Path


def live(path: Path) -> Path:
    """The live generation directory of a store or index directory (what CURRENT names)."""
    return path / (path / "CURRENT").read_text().strip()


def reseal(file: Path, generation: Path | None = None) -> None:
    """Record FILE's new size and sha256 in its generation's manifest, as a tamperer rewriting both would: the
    digest check then passes, and what is left to refuse the file is the store's own shape and range checks.
    GENERATION: the directory whose manifest records FILE, when FILE lies deeper in it (default: its folder)."""
    generation = file.parent if generation is None else generation
    manifest_file = generation / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    name = str(file.relative_to(generation))
    manifest["files"][name] = file.stat().st_size
    manifest["sha256"][name] = hashlib.sha256(file.read_bytes()).hexdigest()
    manifest_file.write_text(json.dumps(manifest))
