"""Benchmark data: clustered (default), random, or the user's embeddings."""

from __future__ import annotations

import numpy as np

# The mixture: CENTRES Gaussians, each stretched (by SPREAD) along its own random
# RANK-dimensional subspace, plus isotropic NOISE, then normalised. Sized so that
# IVF needs a few percent of its lists for recall@10 = 0.95, as with real
# sentence embeddings (at n = 50k, nlist = 256: recall 0.92 at nprobe = 8); round
# isotropic clusters are too easy (one list per cluster) and uniform random
# vectors have no structure for an index to find.
CENTRES, RANK, SPREAD, NOISE = 20, 48, 2.0, 0.6
_GATHER = 2048  # rows whose bases are gathered at once (2048 x 48 x 384 floats: 151 MB)
_CHUNK = 65536


def clustered(n: int, d: int, seed: int, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(corpus, queries): unit vectors from one mixture of elongated Gaussians."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CENTRES, d), dtype=np.float32)
    bases = rng.standard_normal((CENTRES, RANK, d), dtype=np.float32) / np.float32(np.sqrt(RANK))
    x = np.empty((n + n_queries, d), dtype=np.float32)
    for start in range(0, len(x), _CHUNK):  # in chunks: no large temporaries
        block = x[start : start + _CHUNK]
        label = rng.integers(0, CENTRES, len(block))
        z = SPREAD * rng.standard_normal((len(block), RANK), dtype=np.float32)
        for s in range(0, len(block), _GATHER):  # bases[label] is RANK x d floats a row
            rows = slice(s, s + _GATHER)
            block[rows] = centres[label[rows]] + np.einsum("nr,nrd->nd", z[rows], bases[label[rows]])
        block += NOISE * rng.standard_normal(block.shape, dtype=np.float32)
    x = _unit(x)
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
