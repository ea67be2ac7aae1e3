"""Test helpers for tampering with saved generations the way someone with write access to the files would."""

import hashlib
import json
from pathlib import Path


def live(path: Path) -> Path:
    """The live generation directory of a store or index directory (what CURRENT names)."""
    return path / (path / "CURRENT").read_text().strip()


def reseal(file: Path) -> None:
    """Record FILE's new size and sha256 in its generation's manifest, as a tamperer rewriting both would: the
    digest check then passes, and what is left to refuse the file is the store's own shape and range checks."""
    manifest_file = file.parent / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["files"][file.name] = file.stat().st_size
    manifest["sha256"][file.name] = hashlib.sha256(file.read_bytes()).hexdigest()
    manifest_file.write_text(json.dumps(manifest))
