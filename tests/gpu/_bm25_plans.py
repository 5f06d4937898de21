"""The GPU BM25 plans' numpy twins (ragcore.reference) run on a CPU BM25Index, for the
tests of GpuBM25Index (host-side, emulated and on a device)."""

from __future__ import annotations

from ragcore import reference as ref
def impact_search(index, qs, k):
    """The exhaustive plan's hits."""
    return ref.bm25_impact_search(index.impacts(), *index.weighed_queries(qs), k)


def candidate_search(index, qs, k, dense_min_df):
    """The pruned plan's hits, and which queries it leaves to the exhaustive plan."""
    return ref.bm25_candidate_search(index.impacts(), *index.weighed_queries(qs), k,
                                     dense_min_df)
