"""Dense scoring, exact search, k-means objective and scalar codes, in float64 numpy.

Scores follow the library's convention: higher is better; for "l2" the score is minus the
squared Euclidean distance.
"""

from __future__ import annotations

import numpy as np

from ..hits import Hits
from .selection import topk


METRICS = ("ip", "cosine", "l2")


def round_to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """The float32 values that x becomes once stored as dtype, each rounded to the nearest
    value of dtype, ties to the even one."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "float32":
        return x.copy()
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return _round_to_bfloat16(x)
    raise ValueError(f"unknown dtype {dtype!r}; expected float32, float16 or bfloat16")


def _round_to_bfloat16(x: np.ndarray) -> np.ndarray:
    """bfloat16 keeps a float32's upper 16 bits. Of the two bfloat16 values around x (its
    upper bits as they are, and one step further from zero), the nearer one, measured in
    float64; on a tie, the one whose last kept bit is 0."""
    bits = np.ascontiguousarray(x).view(np.uint32)
    toward_zero = bits & np.uint32(0xFFFF0000)
    below = toward_zero.view(np.float32)
    beyond = (toward_zero + np.uint32(0x10000)).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        gap_below = np.abs(x.astype(np.float64) - below.astype(np.float64))
        gap_beyond = np.abs(beyond.astype(np.float64) - x.astype(np.float64))
    below_is_even = (toward_zero & np.uint32(0x10000)) == 0
    take_beyond = (gap_beyond < gap_below) | ((gap_beyond == gap_below) & ~below_is_even)
    return np.where(take_beyond, beyond, below).astype(np.float32)


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Rows divided by their Euclidean norm, in float64."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def dense_scores(corpus: np.ndarray, queries: np.ndarray, metric: str = "ip") -> np.ndarray:
    """float64 [nq, n] scores of every query against every corpus row."""
    corpus = np.asarray(corpus, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    if metric == "ip":
        return queries @ corpus.T
    if metric == "cosine":
        return normalize_rows(queries) @ normalize_rows(corpus).T
    if metric == "l2":
        diff = queries[:, None, :] - corpus[None, :, :]
        return -np.einsum("qnd,qnd->qn", diff, diff)
    raise ValueError(f"unknown metric {metric!r}; expected one of {METRICS}")


def flat_search(corpus, queries, k: int, metric: str = "ip", ids=None) -> Hits:
    """Exact top-k by brute force."""
    corpus = np.asarray(corpus)
    if ids is None:
        ids = np.arange(len(corpus), dtype=np.int64)
    return topk(dense_scores(corpus, np.atleast_2d(queries), metric), ids, k)


def filtered_flat_search(corpus, queries, k: int, allowed_ids, metric: str = "ip",
                         ids=None) -> Hits:
    """Exact top-k among the rows whose id is in allowed_ids (padded if fewer than k)."""
    corpus = np.asarray(corpus)
    ids = np.arange(len(corpus), dtype=np.int64) if ids is None else np.asarray(ids, np.int64)
    keep = np.isin(ids, np.asarray(allowed_ids, dtype=np.int64))
    return flat_search(corpus[keep], queries, k, metric, ids[keep])


def kmeans_objective(x: np.ndarray, centroids: np.ndarray) -> float:
    """Sum over the points of the squared distance to their nearest centroid (float64)."""
    x = np.asarray(x, dtype=np.float64)
    c = np.asarray(centroids, dtype=np.float64)
    dist = (x * x).sum(1)[:, None] - 2.0 * x @ c.T + (c * c).sum(1)[None, :]
    return float(np.maximum(dist.min(axis=1), 0.0).sum())


def scalar_quantize(x: np.ndarray, code_min: np.ndarray, code_scale: np.ndarray) -> np.ndarray:
    """8-bit per-dimension codes: for each dimension p, the level
    round((x_p - code_min_p) / code_scale_p), clipped to 0..255."""
    x = np.asarray(x, dtype=np.float64)
    codes = np.empty(x.shape, dtype=np.uint8)
    for p in range(x.shape[1]):
        level = np.round((x[:, p] - code_min[p]) / code_scale[p])
        codes[:, p] = np.minimum(np.maximum(level, 0), 255)
    return codes


def scalar_dequantize(codes: np.ndarray, code_min: np.ndarray, code_scale: np.ndarray) -> np.ndarray:
    """The float64 values the codes stand for: code_min + code_scale * code."""
    return np.asarray(code_min, np.float64) + np.asarray(code_scale, np.float64) * codes
