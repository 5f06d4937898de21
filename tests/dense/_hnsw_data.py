"""Data and measures shared by the HNSWIndex tests."""

from __future__ import annotations

import numpy as np


def clustered(n: int, d: int, seed: int, n_clusters: int = 32) -> np.ndarray:
    """Unit vectors around random centres: neighbourhoods as real embeddings have them."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, d)).astype(np.float32)
    x = centres[rng.integers(0, n_clusters, n)] + 0.6 * rng.standard_normal((n, d)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def recall(got_ids: np.ndarray, true_ids: np.ndarray) -> float:
    """Mean fraction of each query's true top-k found in its returned top-k."""
    k = true_ids.shape[1]
    return float(np.mean([len(set(g) & set(t)) / k for g, t in zip(got_ids.tolist(), true_ids.tolist())]))
