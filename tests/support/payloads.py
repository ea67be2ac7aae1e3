"""Payloads an attacker would ship beside an index, each leaving a marker file when it runs."""

import json
import shutil
from pathlib import Path


def model_with_code(source: str | Path, root: Path, marker: Path) -> Path:
    """A copy of the model at SOURCE whose config maps AutoModel to its own module, which creates MARKER when
    imported: what transformers runs for a model loaded with trust_remote_code, and only then."""
    model = Path(shutil.copytree(source, root / "model-with-code"))
    (model / "payload.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).touch()\n"
        "from transformers import BertModel\n\n\nclass PayloadModel(BertModel):\n    pass\n",
        encoding="utf-8",
    )
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoModel": "payload.PayloadModel"}
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return model
