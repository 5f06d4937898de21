"""Reference implementations of the compressed-code search (PQ with 4-bit codes, alone
and as IVF storage): plain numpy, written from the definitions, independent of the
native fast scan and its running threshold."""

from __future__ import annotations

import numpy as np

from ..hits import Hits


def pq_encode(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Codes [n, m]: per sub-quantiser j, the index of the centroid of centroids[j]
    nearest (squared L2) to x's j-th part; ties go to the lower index."""
    m, ncodes, dsub = centroids.shape
    x = np.asarray(x, dtype=np.float64)
    codes = np.empty((len(x), m), dtype=np.uint8)
    for j in range(m):
        part = x[:, j * dsub : (j + 1) * dsub]
        dist = ((part[:, None, :] - centroids[j][None].astype(np.float64)) ** 2).sum(-1)
        codes[:, j] = np.argmin(dist, axis=1)
    return codes


def pq_tables(q: np.ndarray, centroids: np.ndarray, metric: str) -> np.ndarray:
    """float [m, 16] scores of one query's parts against each centroid (higher is better):
    the inner product, or for "l2" 2<q_j, c> - |c|^2 (minus the squared distance, up to
    the query's own term, which is the same for every vector)."""
    m, ncodes, dsub = centroids.shape
    parts = np.asarray(q, dtype=np.float64).reshape(m, 1, dsub)
    dot = (parts * centroids).sum(-1)
    return 2 * dot - (centroids.astype(np.float64) ** 2).sum(-1) if metric == "l2" else dot


def pq_quantize_tables(tables: np.ndarray) -> np.ndarray:
    """uint8 [m, 16] losses: per row, best - table, times one scale that maps the largest
    loss of all rows to 255, rounded to nearest (half to even)."""
    loss = tables.max(axis=1, keepdims=True) - tables
    top = loss.max()
    scale = 255.0 / top if top > 0 else 0.0
    return np.minimum(255, np.rint(loss * scale)).astype(np.uint8)


def pq_losses(codes: np.ndarray, luts: np.ndarray) -> np.ndarray:
    """int [n]: sum over sub-quantisers j of luts[j, codes[:, j]]."""
    m = codes.shape[1]
    return luts[np.arange(m)[None, :], codes.astype(np.int64)].astype(np.int64).sum(axis=1)


def pq_candidates(losses: np.ndarray, want: int, allowed=None) -> np.ndarray:
    """Rows (int64) of the want smallest losses among the allowed rows (a bool mask by
    row; None: all), ordered by (loss, row)."""
    rows = np.arange(len(losses)) if allowed is None else np.flatnonzero(allowed)
    order = np.lexsort((rows, np.asarray(losses)[rows]))
    return rows[order][:want].astype(np.int64)


def _rescored(exact, rows, ids, q, k, metric):
    """(scores, ids) of the exact top-k of these candidate rows, ties by id ascending."""
    x = exact[rows].astype(np.float64)
    q = np.asarray(q, dtype=np.float64)
    s = -((x - q) ** 2).sum(1) if metric == "l2" else x @ q
    best = np.lexsort((ids[rows], -s))[:k]
    return s[best], ids[rows][best]


def _hits(results, nq: int, k: int) -> Hits:
    scores = np.full((nq, k), -np.inf, dtype=np.float64)
    out = np.full((nq, k), -1, dtype=np.int64)
    for i, (s, ids) in enumerate(results):
        scores[i, : len(s)], out[i, : len(s)] = s, ids
    return Hits(scores.astype(np.float32), out)


def pq_search(exact: np.ndarray, codes: np.ndarray, luts_per_query: list, queries: np.ndarray,
              k: int, rescore: int, metric: str = "ip", ids=None, allowed=None) -> Hits:
    """The candidates (the rescore * k smallest losses among the allowed rows, ties by
    lower row) re-scored exactly; the top-k of those, ties by id ascending, padded (-1, -inf)."""
    n = len(exact)
    ids = np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
    results = []
    for i in range(len(queries)):
        rows = pq_candidates(pq_losses(codes, luts_per_query[i]), rescore * k, allowed)
        results.append(_rescored(exact, rows, ids, queries[i], k, metric))
    return _hits(results, len(queries), k)


def ivf_probes(centroids: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Every list, nearest centroid (squared L2) first, ties to the lower list."""
    dist = ((centroids.astype(np.float64) - np.asarray(q, dtype=np.float64)) ** 2).sum(1)
    return np.lexsort((np.arange(len(centroids)), dist))


def ivf_pq_search(centroids: np.ndarray, offsets: np.ndarray, exact: np.ndarray,
                  codes: np.ndarray, luts_per_query: list, queries: np.ndarray, k: int,
                  nprobe: int, rescore: int, metric: str = "ip", ids=None,
                  allowed=None) -> Hits:
    """IVF over PQ codes: rows in list order (list l: rows offsets[l]:offsets[l+1]).
    A query's candidates are the rescore * k smallest (loss, row) of the allowed rows of
    its nprobe nearest lists; with a filter it takes further lists, nearest first, while
    they hold fewer than k allowed rows. Then re-scored exactly as pq_search."""
    n = len(exact)
    ids = np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
    filtered = allowed is not None  # any filter, even one allowing every row, probes further
    allowed = np.ones(n, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    results = []
    for i in range(len(queries)):
        scanned = np.zeros(n, dtype=bool)
        for r, lst in enumerate(ivf_probes(centroids, queries[i])):
            if r >= nprobe and (not filtered or (scanned & allowed).sum() >= k):
                break
            scanned[offsets[lst] : offsets[lst + 1]] = True
        rows = pq_candidates(pq_losses(codes, luts_per_query[i]), rescore * k, scanned & allowed)
        results.append(_rescored(exact, rows, ids, queries[i], k, metric))
    return _hits(results, len(queries), k)
