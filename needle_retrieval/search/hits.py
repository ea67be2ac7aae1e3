"""What a search answers, as the CLI's ``--json`` and needle's own MCP tools write it."""

from typing import TypedDict

from haystack import Document


class Hit(TypedDict):
    """One search result in the CLI's --json output."""

    id: str
    score: float | None
    content: str | None


def as_hits(documents: list[Document]) -> list[Hit]:
    """The CLI's --json shape for one query: ``{"id", "score", "content"}`` per hit, best first."""
    return [{"id": d.id, "score": d.score, "content": d.content} for d in documents]
