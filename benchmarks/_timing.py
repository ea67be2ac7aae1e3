"""Timing shared by the benchmarks: ours and the peer alternate, so machine drift hits both sides equally."""

import statistics
import time
from collections.abc import Callable, Sequence


def median_seconds_abba(
    rounds: int, ours: Callable[[], object], peer: Callable[[], object], warm_up: Callable[[], object] | None = None
) -> tuple[float, float]:
    """Median wall time of ``ours`` and ``peer`` over ``rounds`` ABBA-ordered runs each.

    ``warm_up`` runs first when given (e.g. one call that loads a shared model); otherwise each side runs once.
    """
    for fn in (warm_up,) if warm_up else (ours, peer):
        fn()
    times: dict[str, list[float]] = {"ours": [], "peer": []}
    order = [("ours", ours), ("peer", peer)]
    for i in range(rounds):
        for name, fn in order if i % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["ours"]), statistics.median(times["peer"])


def rotating_rounds(rounds: int, sides: Sequence[Callable[[], object]]) -> list[list[float]]:
    """Wall seconds of every side in each of ``rounds`` rounds (``times[side][round]``), after one untimed run each.

    Within a round the sides run back to back, starting one further along from round to round, so a slow
    stretch of a shared machine slows them alike and no side always runs first (after a cache-cold one).
    """
    for side in sides:
        side()
    times: list[list[float]] = [[] for _ in sides]
    for round_number in range(rounds):
        shift = round_number % len(sides)
        for number in [*range(shift, len(sides)), *range(shift)]:
            start = time.perf_counter()
            sides[number]()
            times[number].append(time.perf_counter() - start)
    return times


def paired_ratio(times: list[list[float]], side: int, over: int = 0) -> float:
    """Median over rounds of ``times[side] / times[over]`` in the same round: how many times slower ``side`` is
    (> 1) or faster (< 1), robust to drift between rounds, which best-of figures from different rounds are not."""
    return statistics.median(a / b for a, b in zip(times[side], times[over], strict=True))
