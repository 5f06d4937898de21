"""The rows a k-means trains on (the coarse quantizer's and each 4-bit PQ codebook's):
centroids barely move past this many training points per cluster (faiss's
max_points_per_centroid), while k-means time grows with every one."""

from __future__ import annotations

import numpy as np

MAX_POINTS_PER_CLUSTER = 256


def kmeans_sample(x: np.ndarray, clusters: int, seed: int) -> np.ndarray:
    """All of x, or MAX_POINTS_PER_CLUSTER * clusters of its rows drawn without replacement
    by the seed, in their order in x (C-contiguous either way)."""
    limit = MAX_POINTS_PER_CLUSTER * clusters
    if len(x) <= limit:
        return np.ascontiguousarray(x)
    return x[np.sort(np.random.default_rng(seed).choice(len(x), limit, replace=False))]
