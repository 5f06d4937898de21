"""Small data sets for the IVF tests."""

from __future__ import annotations

import numpy as np


def clustered(n: int, d: int, centres: int, seed: int, spread: float = 0.3) -> np.ndarray:
    """n float32 rows around `centres` Gaussian centres (so IVF lists mean something)."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, d)).astype(np.float32)
    x = c[rng.integers(0, centres, n)] + spread * rng.standard_normal((n, d)).astype(np.float32)
    return x.astype(np.float32)


def small_integers(n: int, d: int, seed: int) -> np.ndarray:
    """float32 rows of small integers: dot products are exact in any order of summation."""
    return np.random.default_rng(seed).integers(-4, 5, size=(n, d)).astype(np.float32)


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(np.intersect1d(f, t)) / t.shape[0] for f, t in zip(found, truth)]))
