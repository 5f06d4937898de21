"""Hypothesis strategies for batches of result lists (Hits) to fuse."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ragcore.hits import Hits


@st.composite
def hits_batch(draw, nq: int, ids=range(10), scores=None, max_k: int = 6, min_results: int = 0,
               ties: bool = False) -> Hits:
    """Hits of nq queries: distinct ids per row, scores decreasing (strictly unless ties),
    equal scores by id ascending, padded with -1."""
    scores = scores if scores is not None else st.integers(-40, 40).map(lambda x: x / 8)
    k = draw(st.integers(max(1, min_results), max_k))
    out_ids = np.full((nq, k), -1, dtype=np.int64)
    out_scores = np.full((nq, k), -np.inf, dtype=np.float32)
    for row in range(nq):
        n = draw(st.integers(min_results, k))
        out_ids[row, :n] = draw(st.permutations(list(ids)))[:n]
        values = draw(st.lists(scores, min_size=n, max_size=n, unique=not ties))
        pairs = sorted(zip(values, out_ids[row, :n].tolist()), key=lambda p: (-p[0], p[1]))
        out_scores[row, :n] = [v for v, _ in pairs]
        out_ids[row, :n] = [i for _, i in pairs]
    return Hits(out_scores, out_ids)


@st.composite
def hits_lists(draw, min_lists: int = 2, max_lists: int = 3, **kw) -> list:
    nq = draw(st.integers(1, 3))
    m = draw(st.integers(min_lists, max_lists))
    return [draw(hits_batch(nq, **kw)) for _ in range(m)]


def hits(*rows, k=None) -> Hits:
    """Hits from rows of (id, score) pairs, best first, padded to k."""
    k = k or max(len(r) for r in rows)
    ids = np.full((len(rows), k), -1, dtype=np.int64)
    scores = np.full((len(rows), k), -np.inf, dtype=np.float32)
    for i, row in enumerate(rows):
        for j, (doc, score) in enumerate(row):
            ids[i, j], scores[i, j] = doc, score
    return Hits(scores, ids)
