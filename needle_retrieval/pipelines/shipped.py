"""The YAML pipelines this package ships: the one place the code (and a user) finds them.

They live in the repository's top-level ``pipelines/`` and are installed as package data in
``needle_retrieval/pipelines/yaml/`` (in a checkout, that folder is a link to ``pipelines/``). Everything reads them
through ``importlib.resources``, so an installed wheel finds the very files a checkout does::

    from importlib.resources import files
    from haystack import Pipeline
    import components  # allowlists our component types for Pipeline.loads

    text = (files("needle_retrieval.pipelines") / "yaml" / "bm25_search.yaml").read_text(encoding="utf-8")
    pipeline = Pipeline.loads(text)

``needle pipelines list`` and ``needle pipelines show NAME`` print the same files from the command line.
"""

import json
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

import yaml

from needle_retrieval.errors import NeedleError

PACKAGE = "needle_retrieval.pipelines"
FOLDER = "yaml"
SUFFIX = ".yaml"


def folder() -> Traversable:
    """The installed folder of pipeline files (a real directory for every install pip makes)."""
    return files(PACKAGE) / FOLDER


def names() -> list[str]:
    """The shipped pipelines' names (file names without ``.yaml``), sorted."""
    return sorted(item.name[: -len(SUFFIX)] for item in folder().iterdir() if item.name.endswith(SUFFIX))


def read(name: str) -> str:
    """The text of the shipped pipeline NAME (``dense_search`` or ``dense_search.yaml``).

    :raises NeedleError: If no shipped pipeline has that name; the message lists the names there are.
    """
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    known = names()
    if stem not in known:
        raise NeedleError(f"no shipped pipeline named {name!r}; the shipped pipelines are: {', '.join(known)}")
    return (folder() / f"{stem}{SUFFIX}").read_text(encoding="utf-8")


def summary(text: str) -> str:
    """The leading comment of a pipeline file as one line: what the pipeline does."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines)


def described(name: str) -> dict[str, Any]:
    """What ``needle pipelines list --json`` says of one pipeline: its name, summary and Hayhooks blocks' names."""
    text = read(name)
    data = yaml.safe_load(text)
    return {
        "name": name,
        "summary": summary(text),
        "inputs": sorted(data.get("inputs") or {}),
        "outputs": sorted(data.get("outputs") or {}),
    }


def print_list(as_json: bool = False) -> None:
    """Print every shipped pipeline: a line each (name, then what it does), or one JSON list."""
    entries = [described(name) for name in names()]
    if as_json:
        print(json.dumps(entries, indent=2))
        return
    width = max(len(entry["name"]) for entry in entries)
    for entry in entries:
        print(f"{entry['name']:<{width}}  {entry['summary']}")


def print_pipeline(name: str) -> None:
    """Print the YAML of the shipped pipeline NAME as it is shipped, comments included."""
    sys.stdout.write(read(name))
