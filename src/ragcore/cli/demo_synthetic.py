"""``ragcore demo --synthetic``: exact dense search on synthetic clustered embeddings.

Builds a FlatIndex in each storage dtype, checks its answers against an exact
numpy top-k on a sample of queries, and prints latency at batch 1 and batched.
The main demo (``ragcore demo``) is the hybrid pipeline in demo_hybrid.py.
"""

from __future__ import annotations

import time

import numpy as np

from ..dense.flat import FlatIndex


def clustered_vectors(n: int, dim: int, n_clusters: int = 256, seed: int = 0) -> np.ndarray:
    """Normalised vectors drawn around random centres (a mixture of Gaussians)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, dim)).astype(np.float32)
    x = centres[rng.integers(0, n_clusters, n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _best_of(fn, repeats: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run_demo(n: int = 100_000, dim: int = 384, n_queries: int = 256, k: int = 10) -> None:
    data = clustered_vectors(n + n_queries, dim)
    corpus, queries = data[:n], data[n:]
    print(f"ragcore demo: exact top-{k}, {n} x {dim} clustered vectors, {n_queries} queries")
    checked = queries[:16]
    exact_ids = np.argsort(-(checked.astype(np.float64) @ corpus.T), axis=1, kind="stable")[:, :k]
    print(f"{'dtype':<10}{'recall@k vs exact':>20}{'batch 1 ms':>14}{'batched QPS':>14}")
    for dtype in ("float32", "float16", "bfloat16"):
        index = FlatIndex(dim, metric="ip", dtype=dtype)
        index.add(corpus)
        hits = index.search(checked, k)
        recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(hits.ids, exact_ids)])
        one = _best_of(lambda: index.search(queries[0], k))
        batch = _best_of(lambda: index.search(queries, k), repeats=3)
        print(f"{dtype:<10}{recall:>20.4f}{one * 1e3:>14.2f}{n_queries / batch:>14.0f}")
    numpy_time = _best_of(lambda: np.argpartition(-(queries @ corpus.T), k, axis=1), repeats=3)
    print(f"numpy matmul + argpartition, batched QPS: {n_queries / numpy_time:.0f}")
