"""recall_vs_exact: recall@k of approximate results against exact ones."""

from __future__ import annotations

import numpy as np

from ...hits import PADDING_ID, Hits


def recall_vs_exact(approx_hits, exact_hits, k: int) -> float:
    """Mean over queries of |approx top-k ∩ exact top-k| / |exact top-k|.

    Both are ``Hits`` (or int64 id arrays [nq, >= k]); padding ids (-1) are not
    results. Queries whose exact answer is empty are left out; if every query's
    is, the recall is 1.0 (nothing could be missed).
    """
    approx, exact = _ids(approx_hits, "approx_hits"), _ids(exact_hits, "exact_hits")
    if approx.shape[0] != exact.shape[0]:
        raise ValueError(f"approx_hits has {approx.shape[0]} queries, exact_hits {exact.shape[0]}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if approx.shape[1] < k or exact.shape[1] < k:
        raise ValueError(f"k={k} exceeds the results per query ({approx.shape[1]}, {exact.shape[1]})")
    per_query = []
    for found, truth in zip(approx[:, :k], exact[:, :k]):
        truth = truth[truth != PADDING_ID]
        if len(truth):
            per_query.append(np.isin(truth, found[found != PADDING_ID]).sum() / len(truth))
    return float(np.mean(per_query)) if per_query else 1.0


def _ids(hits, name: str) -> np.ndarray:
    ids = hits.ids if isinstance(hits, Hits) else np.asarray(hits)
    if ids.ndim != 2 or ids.dtype.kind not in "iu":
        raise TypeError(f"{name} must be Hits or a 2-D integer id array, got {ids.dtype} {ids.shape}")
    return ids
