"""Lloyd k-means from given starting centroids, in float64 numpy: the rule of the native
kmeans after its initialisation (which draws from a C++ random engine and is not redone here).
"""

from __future__ import annotations

import numpy as np


def _assign(x: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centroid by squared L2 (ties to the lower number) and its distance."""
    dist = ((x[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
    labels = dist.argmin(axis=1)
    return labels, dist[np.arange(len(x)), labels]


def nearest_l2(x, centroids) -> tuple[np.ndarray, np.ndarray]:
    """(labels int64, squared distances float64): each row's nearest centroid by squared L2
    in float64, ties to the lower centroid number (the native nearest_l2's rule)."""
    labels, dist = _assign(np.asarray(x, dtype=np.float64), np.asarray(centroids, dtype=np.float64))
    return labels.astype(np.int64), dist


def pq_codebooks(x, m: int, starts, max_iter: int = 25, tol: float = 1e-4) -> np.ndarray:
    """[m, k, d / m]: kmeans_lloyd on each sub-space j of x (columns j * d / m ..) from
    starts[j], the rule of the native pq4_train after each k-means's initialisation."""
    x = np.asarray(x, dtype=np.float64)
    dsub = x.shape[1] // m
    return np.stack([kmeans_lloyd(x[:, j * dsub : (j + 1) * dsub], starts[j], max_iter, tol)[0]
                     for j in range(m)])


def _unit(c: np.ndarray) -> np.ndarray:
    norms = np.sqrt((c * c).sum(axis=1, keepdims=True))
    return np.where(norms > 0, c / np.where(norms > 0, norms, 1.0), c)


def kmeans_lloyd(x, centroids, max_iter: int, tol: float = 1e-4, spherical: bool = False):
    """(centroids, objective per assignment, iterations, reseeded).

    Each update: a cluster's centroid becomes the mean of its points; each empty cluster, in
    order, takes the farthest point from its own centroid among the points of clusters that
    still have more than one (that cluster losing it); with spherical, every centroid is then
    scaled to unit norm. Stops when the objective improves by at most tol of itself.
    """
    x = np.asarray(x, dtype=np.float64)
    c = np.array(centroids, dtype=np.float64)
    labels, dist = _assign(x, c)
    objective, iterations, reseeded = [float(dist.sum())], 0, 0
    for _ in range(max_iter):
        sizes = np.bincount(labels, minlength=len(c))
        for j in np.flatnonzero(sizes):
            c[j] = x[labels == j].mean(axis=0)
        far = np.argsort(-dist, kind="stable")
        nxt = 0
        for j in np.flatnonzero(sizes == 0):
            reseeded += 1
            while nxt < len(x) and sizes[labels[far[nxt]]] <= 1:
                nxt += 1
            if nxt == len(x):
                break
            sizes[labels[far[nxt]]] -= 1
            c[j] = x[far[nxt]]
            nxt += 1
        if spherical:
            c = _unit(c)
        iterations += 1
        labels, dist = _assign(x, c)
        before, after = objective[-1], float(dist.sum())
        objective.append(after)
        if before - after <= tol * before:
            break
    return c, objective, iterations, reseeded
