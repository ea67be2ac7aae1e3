"""The answer shapes of UltraRAG's retriever, declared once for every side that writes or reads them.

UltraRAG's deploy server answers ``POST /search`` with ``{"ret_psg": [[passage, ...], ...]}`` (one list of passage
texts per query, best first, in query order), and its MCP tools answer ``{"ret_psg": ...}`` or, for a batch of
query lists, ``{"ret_psg_ls": [...]}``. ``needle serve``'s ``/search`` and MCP tools write these shapes
(``needle_retrieval.serve``); the remote retrievers read them (``components.retrievers.remote.deploy_client``).

Light: pydantic only, no Haystack, so the MCP server starts without loading it.
"""

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class Passages(BaseModel):
    """One list of passage texts per query, best first, in query order."""

    model_config = ConfigDict(strict=True)  # a number where a passage should be is an error, not a text

    ret_psg: list[list[str]]


class BatchPassages(BaseModel):
    """``Passages`` for each list of queries of a batch."""

    model_config = ConfigDict(strict=True)

    ret_psg_ls: list[list[list[str]]]


def passages_json(texts: Sequence[Sequence[str]]) -> bytes:
    """``Passages`` as compact JSON, as FastAPI writes it, one query's list at a time: for 10,000 queries it is
    megabytes, and one ``json.dumps`` of it all would hold the GIL (and so a server's event loop) for most of a
    second. Equal to ``Passages(ret_psg=texts).model_dump_json()`` (tested)."""
    lists = [json.dumps(list(one), ensure_ascii=False, separators=(",", ":")) for one in texts]
    return ('{"ret_psg":[' + ",".join(lists) + "]}").encode()


def read_passages(body: Any, n_queries: int, shown: int = 500) -> list[list[str]]:
    """The ``ret_psg`` lists of a decoded answer, after checking it is ``Passages`` with one list per query.

    :raises ValueError: naming what is wrong, with at most SHOWN characters of the answer.
    """
    try:
        lists = Passages.model_validate(body).ret_psg
    except ValidationError as error:
        first = error.errors()[0]
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
        raise ValueError(
            f'expected {{"ret_psg": [[passage, ...], ...]}}: {where or "the answer"}: {first["msg"]} '
            f"(answer: {str(body)[:shown]})"
        ) from None
    if len(lists) != n_queries:
        raise ValueError(f"expected {n_queries} ret_psg lists (one per query), got {len(lists)}")
    return lists
