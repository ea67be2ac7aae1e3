"""What the fusion joiners share: one Candidates per side, checked against its socket and the number of queries."""

import math
from typing import cast

import numpy as np

from components.retrievers.candidates import Candidates, Side


def sides(count: int, dense: Candidates | None, sparse: Candidates | None) -> list[tuple[Side, Candidates]]:
    """
    The connected sides, dense first; ValueError when a side came through the other side's socket or holds a
    number of result lists other than ``count`` (one per query).
    """
    found: list[tuple[Side, Candidates]] = []
    for socket, side, candidates in (("dense_candidates", "dense", dense), ("sparse_candidates", "sparse", sparse)):
        if candidates is None:
            continue
        if candidates.side != side:
            raise ValueError(f"{socket} got {candidates.side} candidates: connect a {side} retriever to it")
        if len(candidates) != count:
            raise ValueError(
                f"{socket} holds {len(candidates)} result lists for {count} queries; they must match one to one"
            )
        found.append((side, candidates))
    return found


def checked_scores(candidates: Candidates, query: int, socket: str) -> list[float]:
    """Query ``query``'s scores as floats; ValueError naming the hit whose score is missing, NaN or infinite."""
    given = candidates.scores(query)
    if set(map(type, given)) <= {float, int}:  # the usual case, checked and converted at C speed
        values = np.array(given, dtype=np.float64)
        if np.isfinite(values).all():
            return cast(list[float], values.tolist())
    scores = []
    for position, score in enumerate(given):
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            doc_id = candidates.ids(query)[position]
            raise ValueError(
                f"{socket}[{query}][{position}] (id={doc_id}) has score {score!r}; fusion needs a finite score"
            )
        scores.append(float(score))
    return scores
