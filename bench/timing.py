"""Timing for the tasks: systems interleaved in rounds, the best round kept.

On a shared machine the slow phases come from others; interleaving puts every system through
the same phases, and the best of several rounds is the figure least disturbed by them.
"""

from __future__ import annotations

import time


def seconds_per_call(fns: dict, rounds: int, min_seconds: float) -> dict:
    """{name: best over rounds of the mean seconds per call} (each fn warmed up once)."""
    for fn in fns.values():
        fn()
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            calls, start = 0, time.perf_counter()
            while True:
                fn()
                calls += 1
                elapsed = time.perf_counter() - start
                if elapsed >= min_seconds:
                    break
            best[name] = min(best[name], elapsed / calls)
    return best


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def recall(found, truth) -> float:
    """Mean over queries of |found ∩ truth| / |truth| (ids as arrays or lists per query)."""
    total = 0.0
    for f, t in zip(found, truth):
        t = [int(i) for i in t if int(i) >= 0]
        total += len(set(int(i) for i in f) & set(t)) / max(len(t), 1)
    return total / max(len(truth), 1)
