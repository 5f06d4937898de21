"""The model calls of one encode call, on several threads at once.

A CPU call of 256 padded tokens keeps about one core busy even with two intra-op
threads (its products are too small to split well), so a bulk encode runs its
sub-batches side by side instead: one Python thread per core, each model call on
one core (an intra-op-1 onnxruntime session, which computes in the calling thread
and releases the GIL), never a pool inside a pool. Each sub-batch gives the same
bits whichever thread runs it, so the results equal the one-thread path's.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def map_in_order(fn, items: list, workers: int, on_result=None) -> list:
    """[fn(item) for item in items], on up to `workers` threads; each thread takes
    the next item when it is free, and the results come back in the items' order.
    on_result(item, result), when given, is called on the calling thread for each
    result in that order, as soon as it and those before it are done."""
    if workers <= 1 or len(items) <= 1:
        return [_reported(on_result, item, fn(item)) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items)),
                            thread_name_prefix="ragcore-encode") as pool:
        return [_reported(on_result, item, result) for item, result in zip(items, pool.map(fn, items))]


def _reported(on_result, item, result):
    if on_result is not None:
        on_result(item, result)
    return result
