"""Benchmark data: clustered (default), random, or the user's embeddings."""

from __future__ import annotations

import numpy as np

# Gaussian centres per 1000 vectors, and the noise around a centre relative to
# the centres' spread: sized so that IVF needs nprobe of a few percent of the
# lists for recall@10 = 0.95, as with real sentence embeddings (uniform random
# vectors have no structure for an index to find).
CENTRES_PER_1000 = 5
NOISE = 0.9


def clustered(n: int, d: int, seed: int, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(corpus, queries): unit vectors from one mixture of Gaussians."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n * CENTRES_PER_1000 // 1000), d), dtype=np.float32)
    x = _unit(centres[rng.integers(0, len(centres), n + n_queries)]
              + NOISE * rng.standard_normal((n + n_queries, d), dtype=np.float32))
    return x[:n], x[n:]


def uniform(n: int, d: int, seed: int, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(corpus, queries): unit vectors in uniformly random directions."""
    x = _unit(np.random.default_rng(seed).standard_normal((n + n_queries, d), dtype=np.float32))
    return x[:n], x[n:]


def from_file(path: str, n: int | None, seed: int, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(corpus, queries) from a float .npy of embeddings; queries are held-out rows."""
    x = np.load(path, mmap_mode="r")
    if x.ndim != 2 or x.dtype.kind != "f":
        raise ValueError(f"{path}: expected a 2-D float array, got {x.dtype} {x.shape}")
    if len(x) <= n_queries:
        raise ValueError(f"{path}: {len(x)} rows; need more than --queries={n_queries}")
    order = np.random.default_rng(seed).permutation(len(x))
    queries = np.asarray(x[np.sort(order[:n_queries])], dtype=np.float32)
    rest = np.sort(order[n_queries:])[:n] if n else np.sort(order[n_queries:])
    return np.asarray(x[rest], dtype=np.float32), queries


def _unit(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x
