"""Merging per-shard top-k results into one top-k (plain numpy, no Ray)."""

from __future__ import annotations

import numpy as np

from .._util.arrays import check_positive_int
from ..hits import PADDING_ID, Hits


def merge_hits(hits_list, k: int) -> Hits:
    """The best k of each query across shard results: score descending, ties by id ascending.

    hits_list: one ``Hits`` per shard over the same queries (each may have its own k), each
    row best first and padded with (-1, -inf). Because every shard returns its own top-k
    under the same order, the merged top-k is exactly the top-k of the union of the shards.
    Rows are padded with (-1, -inf) when the shards hold fewer than k results together.
    An id returned by two shards in one row is an error: ids must be unique across shards.

    The k-way merge is done as one stable sort of the concatenated rows, vectorised over the
    queries (numpy has no heap merge; the reference, ragcore.reference.merge_topk, is one).
    """
    k = check_positive_int(k, "k")
    if isinstance(hits_list, Hits) or not isinstance(hits_list, (list, tuple)):
        raise TypeError("hits_list must be a list of Hits (one per shard)")
    if not hits_list:
        raise ValueError("hits_list is empty; pass one Hits per shard")
    for i, hits in enumerate(hits_list):
        if not isinstance(hits, Hits):
            raise TypeError(f"hits_list[{i}] must be a Hits, got {type(hits).__name__}")
        if hits.nq != hits_list[0].nq:
            raise ValueError(f"hits_list[{i}] has {hits.nq} queries but hits_list[0] has "
                             f"{hits_list[0].nq}; every shard must answer the same queries")
    scores = np.concatenate([h.scores for h in hits_list], axis=1)
    ids = np.concatenate([h.ids for h in hits_list], axis=1)
    _check_unique(ids)
    nq, width = ids.shape
    padding = ids == PADDING_ID
    # Last key sorts first: real results before padding, then score descending, then id.
    order = np.lexsort((ids, -scores, padding), axis=-1)[:, :k]
    out_scores = np.full((nq, k), -np.inf, dtype=np.float32)
    out_ids = np.full((nq, k), PADDING_ID, dtype=np.int64)
    kept = min(k, width)
    out_scores[:, :kept] = np.take_along_axis(scores, order, axis=1)
    out_ids[:, :kept] = np.take_along_axis(ids, order, axis=1)
    # A padding slot keeps (-1, -inf) even if a shard padded with another score.
    out_scores[out_ids == PADDING_ID] = -np.inf
    return Hits(out_scores, out_ids)


def _check_unique(ids: np.ndarray) -> None:
    srt = np.sort(ids, axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != PADDING_ID)
    if dup.any():
        row, col = (int(x) for x in np.argwhere(dup)[0])
        raise ValueError(f"id {int(srt[row, col])} was returned by more than one shard "
                         f"(query {row}); ids must be unique across shards")
