"""The `needle` command run in-process by tests, its output parsed."""

import json

import pytest

from needle_retrieval.cli import main


def search_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[list[dict[str, object]]]:
    """`needle search ARGV --json` in-process: exit 0, and what it printed, parsed (one list of hits per query)."""
    capsys.readouterr()
    assert main(["search", *argv, "--json"]) == 0
    hits: list[list[dict[str, object]]] = json.loads(capsys.readouterr().out)
    return hits
