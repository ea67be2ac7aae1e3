"""Build samples/python_docs.jsonl: passages from the docstrings of Python's standard library modules.

The sample corpus that `make run` indexes. The text is CPython's own documentation (PSF licence, which
permits redistribution); this script records how the file was made. Run: python samples/make_python_docs.py
"""

import importlib
import json
import re
import sys
import warnings
from pathlib import Path

SKIP = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "__hello__", "__phello__"}
MAX_WORDS = 120


def module_docs() -> list[tuple[str, str]]:
    """(module name, docstring) for each importable stdlib module that documents itself."""
    out = []
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in SKIP:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                doc = importlib.import_module(name).__doc__
            except Exception:
                continue
        if doc and len(doc.split()) >= 8:
            out.append((name, doc))
    return out


def passages(doc: str) -> list[str]:
    """Split a docstring on blank lines and pack paragraphs into passages of at most MAX_WORDS words."""
    chunks, current = [], []
    for para in re.split(r"\n\s*\n", doc):
        words = para.split()
        if current and len(current) + len(words) > MAX_WORDS:
            chunks.append(" ".join(current))
            current = []
        current.extend(words[: MAX_WORDS * 2])
    if current:
        chunks.append(" ".join(current))
    return [c for c in chunks if len(c.split()) >= 8]


def main() -> None:
    out = Path(__file__).with_name("python_docs.jsonl")
    with out.open("w", encoding="utf-8") as f:
        for name, doc in module_docs():
            for i, text in enumerate(passages(doc)[:6]):
                row = {"id": f"{name}-{i}", "title": name, "contents": text}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {sum(1 for _ in out.open())} passages to {out}")


if __name__ == "__main__":
    main()
