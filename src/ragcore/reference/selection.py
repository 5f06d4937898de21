"""Top-k selection and the k-way merge, by sorting: score descending, then id ascending."""

from __future__ import annotations

import numpy as np

from ..hits import PADDING_ID, Hits


def topk(scores: np.ndarray, ids: np.ndarray, k: int) -> Hits:
    """Best k of each row of scores: score descending, ties by id ascending, padded."""
    scores = np.asarray(scores, dtype=np.float64)
    ids = np.asarray(ids, dtype=np.int64)
    nq, n = scores.shape
    out_scores = np.full((nq, k), -np.inf, dtype=np.float32)
    out_ids = np.full((nq, k), PADDING_ID, dtype=np.int64)
    kept = min(k, n)
    for row in range(nq):
        order = np.lexsort((ids, -scores[row]))[:kept]
        out_scores[row, :kept] = scores[row, order]
        out_ids[row, :kept] = ids[order]
    return Hits(out_scores, out_ids)


def merge_topk(lists: list, k: int) -> list:
    """k-way merge of one query's per-shard results into the best k (id, score) pairs.

    lists holds, per shard, (id, score) pairs in ragcore's order (score descending, ties by
    id ascending), padding left out; a heap merge keeps that order across the shards.
    """
    import heapq
    import itertools

    merged = heapq.merge(*lists, key=lambda pair: (-pair[1], pair[0]))
    return list(itertools.islice(merged, k))
