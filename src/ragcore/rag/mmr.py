"""Maximal marginal relevance: a diverse subset of the candidates (Carbonell and Goldstein, SIGIR
1998), as LangChain's ``max_marginal_relevance_search`` uses it.

Greedy: the most similar candidate first, then at each step the candidate that maximises
``lambda_ * sim(query, c) - (1 - lambda_) * max over chosen s of sim(c, s)``; similarity is the
cosine. lambda_ = 1 gives the relevance order, lambda_ = 0 the most diverse set (each next
candidate the least similar to those already chosen). Ties go to the lower position. The k steps
run in Python, each vectorised over all candidates and all queries of a batch.
"""

from __future__ import annotations

import numpy as np

from .._util.arrays import check_positive_int


def mmr(query_vector, candidate_vectors, lambda_: float = 0.5, k: int = 4) -> np.ndarray:
    """Positions (into candidate_vectors) of min(k, n) candidates, in the order chosen.

    query_vector: [d] with candidate_vectors [n, d], or a batch: [nq, d] with [nq, n, d]
    (then the result is [nq, min(k, n)]). Vectors need not be normalised; an all-zero vector,
    NaN or infinity is refused.
    """
    q = _unit(_as_array(query_vector, "query_vector"), "query_vector")
    c = _unit(_as_array(candidate_vectors, "candidate_vectors"), "candidate_vectors")
    single = q.ndim == 1
    if single:
        q, c = q[None], c[None] if c.ndim == 2 else c
    if q.ndim != 2 or c.ndim != 3 or c.shape[0] != q.shape[0] or c.shape[2] != q.shape[1]:
        raise ValueError(
            "query_vector [d] needs candidate_vectors [n, d], and a batch [nq, d] needs "
            f"[nq, n, d]; got {np.shape(query_vector)} and {np.shape(candidate_vectors)}")
    if isinstance(lambda_, bool) or not isinstance(lambda_, (int, float, np.integer, np.floating)) \
            or not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be a number in [0, 1], got {lambda_!r}")
    k = check_positive_int(k, "k")
    nq, n, _ = c.shape
    steps = min(k, n)
    rows = np.arange(nq)
    relevance = np.einsum("qnd,qd->qn", c, q)
    redundancy = np.zeros((nq, n))  # max similarity to a chosen candidate (none chosen yet)
    taken = np.zeros((nq, n), dtype=bool)
    out = np.empty((nq, steps), dtype=np.int64)
    for step in range(steps):
        score = relevance if step == 0 else lambda_ * relevance - (1.0 - lambda_) * redundancy
        pick = np.argmax(np.where(taken, -np.inf, score), axis=1)  # first maximum: lower position
        out[:, step] = pick
        taken[rows, pick] = True
        redundancy = np.maximum(redundancy if step else -np.inf,
                                np.einsum("qnd,qd->qn", c, c[rows, pick]))
    return out[0] if single else out


def _as_array(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu" or arr.dtype == bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds NaN or infinity")
    return arr


def _unit(x: np.ndarray, name: str) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    if (norm == 0).any():
        where = f" at {np.argwhere(norm[..., 0] == 0)[0].tolist()}" if x.ndim > 1 else ""
        raise ValueError(f"{name} is an all-zero vector{where}; cosine needs a direction")
    return x / norm
