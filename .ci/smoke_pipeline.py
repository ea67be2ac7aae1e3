"""Package smoke check: a YAML pipeline runs with ``import components`` and Haystack alone (no needle_retrieval code).

Run by ``.ci/package_smoke.sh`` with the installed wheel, from outside the repository, on an index that
``needle index CORPUS --out INDEX --bm25`` built::

    python smoke_pipeline.py INDEX QUERY

runs the shipped ``bm25_search.yaml`` with its store path set to INDEX's BM25 part, then the live generation's own
``INDEX/gen-NNNNNN/bm25_search.yaml`` (paths relative to INDEX) loaded with INDEX as the working directory. It prints
one line per pipeline (what it found) and exits 0, or exits 1 with the reason.
"""

import argparse
import os
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from haystack import Document, Pipeline

import components  # allowlists our component types for Pipeline.loads

POINTER = "CURRENT"  # an index directory's live-generation pointer
PIPELINE = "bm25_search"


def live_generation(index: Path) -> str:
    """The name of INDEX's live generation (``gen-NNNNNN``), as its pointer file says."""
    return (index / POINTER).read_text(encoding="utf-8").strip()


def documents_of(pipeline: Pipeline, query: str) -> list[Document]:
    """Run a one-query search pipeline and return the documents of its ``documents`` output."""
    result: dict[str, Any] = pipeline.run({"retriever": {"query": query}})
    found: list[Document] = result["retriever"]["documents"]
    return found


def check_light() -> None:
    """Fail if anything of needle_retrieval beyond the packages importlib.resources opens was imported."""
    loaded = sorted(name for name in sys.modules if name.startswith("needle_retrieval"))
    extra = set(loaded) - {"needle_retrieval", "needle_retrieval.pipelines"}
    if extra:
        raise SystemExit(f"`import components` pulled in needle_retrieval code: {', '.join(sorted(extra))}")


def summary(what: str, docs: list[Document]) -> str:
    """One line: how many documents WHAT returned, and the best one's id."""
    if not docs:
        raise SystemExit(f"{what} returned no documents")
    return f"{what}: {len(docs)} documents, best {docs[0].id} ({components.__name__} {components.__version__})"


def run_generation(index: Path, query: str) -> str:
    """Load the live generation's own bm25_search.yaml (paths relative to INDEX) with cwd=INDEX, and run it."""
    generation = live_generation(index)
    text = (index / generation / f"{PIPELINE}.yaml").read_text(encoding="utf-8")
    os.chdir(index)
    docs = documents_of(Pipeline.loads(text), query)
    return summary(f"{generation}/{PIPELINE}.yaml", docs)


def run_shipped(index: Path, query: str) -> str:
    """Load the shipped bm25_search.yaml, point its store at INDEX's BM25 part, and run it."""
    text = (files("needle_retrieval.pipelines") / "yaml" / f"{PIPELINE}.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    store = data["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]
    store["path"] = str((index / live_generation(index) / "bm25").resolve())
    docs = documents_of(Pipeline.loads(yaml.safe_dump(data)), query)
    return summary(f"shipped {PIPELINE}.yaml", docs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path)
    parser.add_argument("query")
    args = parser.parse_args()
    index = args.index.resolve()
    lines = [run_shipped(index, args.query), run_generation(index, args.query)]  # the second changes directory
    check_light()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
