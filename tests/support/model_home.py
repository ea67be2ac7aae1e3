"""Where tests build their tiny model directories.

The local ranker refuses model directories under /tmp (and system directories), as mxRAG does, and CI may
clone the repo anywhere, /tmp included; so models go under the user's cache, or NEEDLE_TEST_MODELS.
"""

import os
from pathlib import Path

MODELS = Path(os.environ.get("NEEDLE_TEST_MODELS", Path.home() / ".cache" / "needle" / "test-models"))
