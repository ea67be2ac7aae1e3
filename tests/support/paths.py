"""Where the repository's files are, for every test and helper at any depth under tests/."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
SAMPLE = REPO / "samples" / "python_docs.jsonl"
SCIFACT = REPO.parent / "shared" / "data" / "scifact"  # read in place: its licence forbids copying it
SERVERS = REPO / "tests" / "support" / "servers"
INFINITY = REPO / ".venv-infinity" / "bin" / "infinity_emb"
