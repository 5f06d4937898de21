"""What GET /stats reports of one replica: requests, errors, the batch sizes it ran and
its latency percentiles over the most recent requests."""

from __future__ import annotations

import collections
import threading

import numpy as np

_WINDOW = 10_000  # latencies kept for the percentiles


class ServiceStats:
    def __init__(self):
        self._lock = threading.Lock()
        self.requests = collections.Counter()   # route -> count
        self.errors = collections.Counter()     # status -> count
        self.batch_sizes = collections.Counter()  # queries in one batched search -> times
        self._latencies = collections.deque(maxlen=_WINDOW)

    def request(self, route: str, seconds: float, status: int) -> None:
        with self._lock:
            self.requests[route] += 1
            if status >= 400:
                self.errors[str(status)] += 1
            if route == "search" and status < 400:
                self._latencies.append(seconds)

    def batch(self, size: int) -> None:
        with self._lock:
            self.batch_sizes[size] += 1

    def snapshot(self) -> dict:
        with self._lock:
            lat = np.array(self._latencies, dtype=np.float64)
            sizes = dict(sorted(self.batch_sizes.items()))
            out = {"requests": dict(self.requests), "errors": dict(self.errors),
                   "batch_sizes": {str(s): n for s, n in sizes.items()}}
        n_batches = sum(sizes.values())
        out["mean_batch_size"] = (sum(s * n for s, n in sizes.items()) / n_batches
                                  if n_batches else None)
        out["search_latency_ms"] = (
            {"n": len(lat), **{f"p{p}": float(np.percentile(lat, p) * 1e3) for p in (50, 90, 99)}}
            if len(lat) else {"n": 0})
        return out
