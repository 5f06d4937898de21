"""measure_latency: per-call latency percentiles and QPS of any retriever."""

from __future__ import annotations

import time

import numpy as np

DEFAULT_BATCH_SIZES = (1, 256)


def measure_latency(retriever, queries, k: int, warmup: int = 5, repeats: int = 100,
                    batch_sizes=DEFAULT_BATCH_SIZES) -> dict:
    """Times ``retriever.search(batch, k)`` (or ``retriever(batch, k)``) per batch size.

    For each batch size b, ``warmup`` untimed calls and then ``repeats`` timed
    calls, each on the next b queries (cycling through ``queries``). Returns
    ``{b: {"p50_ms", "p95_ms", "p99_ms", "mean_ms", "qps", "qps_mean", "calls",
    "stages"}}``: percentiles of the per-call latency; "qps" is b / median call
    time (robust to a shared machine's slow phases), "qps_mean" the throughput
    over all timed calls. When the retriever reports its stages (a ``last_stage_seconds``
    dict after each call, as IVFIndex does), "stages" holds the same
    percentiles per stage; otherwise it is empty.
    """
    queries = np.asarray(queries)
    if queries.ndim != 2 or len(queries) == 0:
        raise ValueError(f"queries must be a non-empty 2-D array, got shape {queries.shape}")
    if warmup < 0 or repeats < 1:
        raise ValueError(f"warmup must be >= 0 and repeats >= 1, got {warmup} and {repeats}")
    search = retriever.search if hasattr(retriever, "search") else retriever
    if not callable(search):
        raise TypeError("retriever must have a search(queries, k) method or be callable")
    return {b: _measure_batch(retriever, search, queries, k, warmup, repeats, int(b))
            for b in batch_sizes}


def _measure_batch(retriever, search, queries, k, warmup, repeats, batch) -> dict:
    if batch < 1:
        raise ValueError(f"batch sizes must be >= 1, got {batch}")
    batches = _batches(queries, batch, warmup + repeats)
    for b in batches[:warmup]:
        search(b, k)
    seconds, stages = [], {}
    for b in batches[warmup:]:
        t0 = time.perf_counter()
        search(b, k)
        seconds.append(time.perf_counter() - t0)
        for name, s in getattr(retriever, "last_stage_seconds", {}).items():
            stages.setdefault(name, []).append(s)
    out = _summary(seconds)
    out["qps"] = batch / float(np.median(seconds))
    out["qps_mean"] = batch * len(seconds) / sum(seconds)
    out["calls"] = len(seconds)
    out["stages"] = {name: _summary(s) for name, s in stages.items()}
    return out


def _batches(queries: np.ndarray, batch: int, count: int) -> list[np.ndarray]:
    """count consecutive blocks of `batch` rows, wrapping around the queries."""
    out = []
    for c in range(count):
        rows = np.arange(c * batch, (c + 1) * batch) % len(queries)
        out.append(np.ascontiguousarray(queries[rows]))
    return out


def _summary(seconds: list[float]) -> dict:
    ms = np.asarray(seconds) * 1e3
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
            "p99_ms": float(np.percentile(ms, 99)), "mean_ms": float(ms.mean())}
