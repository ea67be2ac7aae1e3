"""Timing shared by the benchmarks: ours and the peer alternate, so machine drift hits both sides equally."""

import statistics
import time
from collections.abc import Callable


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
