"""Benchmark harness: latency percentiles and QPS, recall against exact search.

``ragcore bench ann`` (see ann.py) sweeps approximate indexes against FlatIndex
ground truth, with peer libraries side by side.
"""

from .latency import measure_latency
from .recall import recall_vs_exact

__all__ = ["measure_latency", "recall_vs_exact"]
